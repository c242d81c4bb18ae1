"""GPU tests of the race checks: the LDS placed 4 cycles behind BAR.SYNC in rmsnorm_triton_style
(the situation of the wrong winner once shipped) must fail the byte check with shared memory
poisoned, at 1 row and at several; the compiler's own schedule must pass."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import tomllib

pytestmark = pytest.mark.gpu

from legality.verify import verify_kernel  # noqa: E402
from reorder.binary.cubin import read_cubin  # noqa: E402
from reorder.sass.model import decode_kernel  # noqa: E402
from reorder.sass.writer import patch_kernel  # noqa: E402
from reorder.suite.sweep import apply_sweep, spec_toml  # noqa: E402
from timing.check import check_pair  # noqa: E402
from timing.spec import load_spec  # noqa: E402

ROOT = Path(__file__).parent.parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"


def _spec(tmp_path: Path, rows: int):
    raw = dict(apply_sweep(tomllib.loads(SPEC.read_text()), {"rows": rows}))
    raw.pop("grid_sweep", None)
    path = tmp_path / f"rows{rows}.toml"
    path.write_text(spec_toml(raw))
    return load_spec(path)


@pytest.fixture(scope="module")
def racy(tmp_path_factory) -> Path:
    code = decode_kernel(read_cubin(CUBIN), "rmsnorm_triton_style")
    ins = list(code.instructions)
    b = next(i for i, x in enumerate(ins) if x.opcode.startswith("BAR.SYNC"))
    ins[b] = ins[b].with_ctrl(ins[b].ctrl.with_(stall=4))
    assert not verify_kernel(code, tuple(ins), original=code.instructions).ok
    path = tmp_path_factory.mktemp("race") / "racy.cubin"
    path.write_bytes(patch_kernel(code.cubin, code.kernel, tuple(ins), code.kernel.regcount))
    return path


@pytest.mark.parametrize("rows", [1, 16, 512])
def test_lds_behind_barrier_fails_the_poisoned_check(tmp_path, racy, rows) -> None:
    result = check_pair(CUBIN, racy, _spec(tmp_path, rows), sets=4)
    assert not result.ok and result.reference_deterministic


def test_the_compiler_schedule_passes_at_every_launch(tmp_path) -> None:
    spec = _spec(tmp_path, 1)
    more = (dataclasses.replace(_spec(tmp_path, 512)),)
    result = check_pair(CUBIN, CUBIN, spec, sets=3, more=more)
    assert result.ok and len(result.launches) == 2 and result.shared_poisoned
