"""GPU-only paths walked on the CPU: everything real but the kernel launches, which a fake
worker pool answers. Each guards a crash that no CPU test used to reach:

- `optimize --timeline` compared instructions by `Instruction.raw`, which does not exist
  (an AttributeError after a whole search, on a GPU only);
- `reorder latency-probe` wrote its CSV and measured table into the installed package
  (`legality/tables/`, `benchmarks/results/`) unless --out was given.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from reorder.binary.cubin import read_cubin
from reorder.report.markdown import Report
from reorder.sass.model import decode_kernel
from reorder.sass.writer import patch_kernel
from reorder.search.scoring import GpuScorer
from timing.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"
KERNEL = "rmsnorm_triton_style"


class _FakePool:
    """A worker pool whose every probe variant 'ran' and recorded 40 cycles per position."""

    jobs: ClassVar[list] = []  # shared: the test reads what every pool was asked

    def __init__(self, devices=None) -> None:
        pass

    def __enter__(self) -> _FakePool:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def map(self, jobs: list) -> list:
        _FakePool.jobs += jobs
        entry = np.full(8, 100, dtype=np.uint32)
        records = np.stack([entry, entry + 40], axis=-1)[None]
        return [SimpleNamespace(ok=True, value=records, status="ok", reason="") for _ in jobs]


def _one_stall_longer(code, index: int, out: Path) -> Path:
    """The kernel with one instruction's stall one cycle longer (legal: only slower)."""
    ins = list(code.instructions)
    ins[index] = ins[index].with_ctrl(ins[index].ctrl.with_(stall=ins[index].ctrl.stall + 1))
    out.write_bytes(patch_kernel(read_cubin(CUBIN), code.kernel, ins))
    return out


def test_optimize_timeline_probes_where_the_winner_differs(tmp_path: Path, monkeypatch) -> None:
    from reorder import optimize
    from timing import worker

    code = decode_kernel(read_cubin(CUBIN), KERNEL)
    index = next(k for k, i in enumerate(code.instructions) if i.base == "FFMA" and i.ctrl.stall < 10)
    winner = _one_stall_longer(code, index, tmp_path / "winner.cubin")
    monkeypatch.setattr(worker, "WorkerPool", _FakePool)
    _FakePool.jobs = []
    scorer = GpuScorer(CUBIN, load_spec(SPEC), pool=None)
    args = SimpleNamespace(cubin=str(CUBIN), output=str(winner), jobs=1)
    report = Report(KERNEL, "sm_90", str(CUBIN), "", 1, 0, 0, "StallCut", None)
    optimize._timeline(args, code, scorer, tmp_path, report)
    assert report.timeline == "timeline.png" and (tmp_path / "timeline.png").stat().st_size > 0
    assert len(_FakePool.jobs) == 2  # one probe variant of the original, one of the winner, at `index`
    assert any(f"in {index}..{index}" in n for n in report.notes), report.notes
    for name in ("original", "optimized"):
        assert (tmp_path / f"timeline_{name}.csv").read_text().count("\n") >= 2


def test_latency_probe_writes_into_the_working_folder_not_the_package(tmp_path: Path, monkeypatch) -> None:
    from legality import latency
    from legality.silicon import latency_probe as lp
    from reorder.cli.main import main

    before = sorted(p.name for p in latency.TABLE_DIR.iterdir())
    row = lp.PairResult(
        "FFMA",
        "measured",
        "FFMA",
        "FFMA",
        "FMA",
        "FMA",
        "raw",
        4,
        4,
        4.0,
        4.0,
        [4, 5],
        [1, 2, 3],
        [],
        [4, 5],
        [],
        8,
        12,
    )
    monkeypatch.setattr(lp, "_cupy", lambda: object())
    monkeypatch.setattr(lp, "gpu_name", lambda cp: "Fake H200")
    monkeypatch.setattr(lp, "run_pairs", lambda folder, names, isolate=True: [row])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / "manifest.json").write_text('{"pairs": []}')  # a build without a canary
    assert main(["latency-probe", "--from", str(tmp_path / "built"), "--pairs", "FFMA"]) == 0
    out = tmp_path / "latency_probe_sm_90"
    assert "FFMA" in (out / "latency_probe_sm_90.csv").read_text()
    assert "Fake H200" in (out / "measured_sm_90.toml").read_text()
    assert sorted(p.name for p in latency.TABLE_DIR.iterdir()) == before


@pytest.mark.parametrize("given", ["elsewhere"])
def test_latency_probe_out_is_where_it_says(tmp_path: Path, monkeypatch, given: str) -> None:
    from legality.silicon import latency_probe as lp
    from reorder.cli.main import main

    monkeypatch.setattr(lp, "_cupy", lambda: object())
    monkeypatch.setattr(lp, "gpu_name", lambda cp: "Fake H200")
    monkeypatch.setattr(lp, "run_pairs", lambda folder, names, isolate=True: [lp.PairResult("FFMA", "no floor")])
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / "manifest.json").write_text('{"pairs": []}')  # a build without a canary
    assert (
        main(["latency-probe", "--from", str(tmp_path / "built"), "--pairs", "FFMA", "--out", str(tmp_path / given)])
        == 0
    )
    assert (tmp_path / given / "measured_sm_90.toml").is_file()
