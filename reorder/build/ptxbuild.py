"""ptxas's build of a moved PTX, with what made it and what the verifier says of it: the one
step both an optimize run and a later `reorder verify` make, so both make the same bytes."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from reorder.base.errors import InputError
from reorder.binary.cubin import parse_cubin
from reorder.build.ptxcandidate import Verdict, verdict
from reorder.build.ptxlevel import PtxLevel
from reorder.ptx.model.model import Module
from reorder.ptx.toolchain.compile import compile_ptx


@dataclass(frozen=True)
class PtxBuild:
    """The cubin bytes ptxas made of a moved PTX, the recipe (ptxas and flags), and the
    verifier's verdict on the level's kernel judged as compiler output."""

    data: bytes
    recipe: str
    verdict: Verdict


def ptx_build(level: PtxLevel, module: Module) -> PtxBuild:
    """Compile `module` the way its producer does (reorder.ptx.toolchain.compile: content-cached)."""
    with tempfile.TemporaryDirectory(prefix="reorder-ptx-") as tmp:
        path = Path(tmp) / Path(level.path).name
        path.write_text(module.text)
        made = compile_ptx(path)
        if made is None:
            raise InputError("the moved PTX does not read as PTX")
        data = made.cubin.read_bytes()
        parse_cubin(data, str(made.cubin))  # what ptxas wrote reads as a cubin
        return PtxBuild(data, made.recipe.describe(), verdict(made.cubin, level.kernel))
