"""A PTX candidate: moves applied, PTX printed, compiled the way its producer would, verified.

Compiling goes through reorder.ptx.toolchain.compile (nvcc's PTX with ptxas -O3, Triton's with Triton's
ptxas and flags), so a candidate is compiled exactly like the original it is timed against.

The SASS is ptxas's own schedule: no SASS move touched it. It is still run through the
project's verifier (legality.verify.verify_kernel), judged as a compiler's cubin is judged
with `verify --against`: a pair ptxas scheduled tighter than the latency tables is
reported as inherited (the tables are conservative where they lack calibration for a
pair), while everything the verifier checks beyond the compiler's schedule (the register
budget, barrier neighbourhoods) must hold. Both counts are kept, so a report can say how
many pairs the plain tables would flag.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from legality.verify import verify_kernel
from reorder.base.errors import InputError
from reorder.base.files import write_atomic
from reorder.binary.cubin import read_cubin
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.space.plans import Move, apply_moves
from reorder.ptx.toolchain.compile import compile_ptx
from reorder.sass.model import decode_kernel


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verifier on a ptxas-made kernel: violations beyond ptxas's own schedule (must be
    none), and pairs ptxas scheduled tighter than the tables (inherited)."""

    kernel: str
    violations: tuple[str, ...]
    inherited: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass(frozen=True, slots=True)
class Built:
    """A written candidate: its PTX and cubin, what was done and what the verifier said."""

    ptx: Path
    cubin: Path
    kernel: str
    moves: tuple[str, ...]
    recipe: str
    sha256: str
    verdict: Verdict
    seconds: float


def read_ptx(path: Path) -> Module:
    """Parse a PTX file (one InputError for a file that is not readable text)."""
    try:
        return parse_module(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read as PTX text: {exc}") from None


def check_compiles(path: Path) -> None:
    """The PTX at `path` is one its producer's ptxas takes (compiled once, cached): a listing
    of moves for PTX that ptxas rejects said nothing of it and exited 0."""
    if compile_ptx(path) is None:
        raise InputError(f"{path}: not PTX ptxas can take: it has no .version and .target lines")


def verdict(cubin: Path, kernel: str) -> Verdict:
    """Verify `kernel` in a cubin ptxas made (see the module docstring)."""
    code = decode_kernel(read_cubin(cubin), kernel)
    report = verify_kernel(code, original=code.instructions)
    return Verdict(kernel, tuple(v.line() for v in report.violations), tuple(v.line() for v in report.inherited))


def build(
    source: Path,
    kernel: str,
    moves: list[Move],
    out_ptx: Path,
    out_cubin: Path | None = None,
    module: Module | None = None,
) -> Built:
    """Apply `moves` to the PTX at `source`, write it to `out_ptx` (never over the source),
    compile it, copy the cubin to `out_cubin` (default: beside the PTX) and verify it."""
    start = time.perf_counter()
    result = apply_moves(module if module is not None else read_ptx(source), list(moves))
    return write_and_compile(source, kernel, result, [m.describe() for m in moves], out_ptx, out_cubin, start)


def write_and_compile(
    source: Path,
    kernel: str,
    result: Module,
    moves: list[str],
    out_ptx: Path,
    out_cubin: Path | None = None,
    start: float | None = None,
) -> Built:
    """Write an already moved module, compile it with its producer's ptxas and verify it."""
    start = time.perf_counter() if start is None else start
    out_cubin = out_cubin or out_ptx.with_suffix(".cubin")
    write_atomic(out_ptx, result.text.encode(), protect=[source])
    compiled = compile_ptx(out_ptx)
    if compiled is None:
        raise InputError(f"{out_ptx}: the written candidate does not read as PTX")
    data = compiled.cubin.read_bytes()
    write_atomic(out_cubin, data, protect=[source, out_ptx])
    checked = verdict(out_cubin, kernel)
    return Built(
        out_ptx,
        out_cubin,
        kernel,
        tuple(moves),
        compiled.recipe.describe(),
        hashlib.sha256(data).hexdigest(),
        checked,
        time.perf_counter() - start,
    )
