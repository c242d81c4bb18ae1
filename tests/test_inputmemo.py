"""Input sets drawn once per worker and reused (timing.inputmemo): the same bytes as a fresh
drawing, read-only, and the least recently used set dropped past the byte budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from timing import inputmemo
from timing.inputs import draw_inputs
from timing.spec import load_spec

SPEC = Path(__file__).resolve().parent / "corpus" / "specs" / "copy_grid_stride.toml"


def test_a_memo_set_is_the_drawing_and_cannot_be_written(monkeypatch) -> None:
    inputmemo.clear()
    spec = load_spec(SPEC)
    first = inputmemo.drawn(spec, 1)
    assert inputmemo.drawn(spec, 1) is first
    fresh = draw_inputs(spec, 1)
    assert all(np.array_equal(np.asarray(first[k]), np.asarray(fresh[k])) for k in fresh)
    with pytest.raises(ValueError):
        first["src"][0] = 1
    inputmemo.clear()


def test_the_least_recently_used_set_goes_past_the_budget(monkeypatch) -> None:
    inputmemo.clear()
    spec = load_spec(SPEC)
    one_set = sum(v.nbytes for v in draw_inputs(spec, 0).values() if isinstance(v, np.ndarray))
    monkeypatch.setattr(inputmemo, "MEMO_BYTES", int(2.5 * one_set))
    a = inputmemo.drawn(spec, 0)
    inputmemo.drawn(spec, 1)
    inputmemo.drawn(spec, 0)  # 0 used last: 1 is the one to go
    inputmemo.drawn(spec, 2)
    assert inputmemo.drawn(spec, 0) is a
    assert (spec, 1) not in inputmemo._memo
    inputmemo.clear()


def test_the_original_runs_once_per_set_and_launch_across_checks(tmp_path: Path, monkeypatch) -> None:
    """A search checks every trial against the same original: from the second trial on, only the
    candidate runs (the original's outputs were kept, and judged deterministic, the first time)."""
    from timing import check, gpu

    inputmemo.clear()
    original, candidate = tmp_path / "a.cubin", tmp_path / "b.cubin"
    original.write_bytes(b"original")
    candidate.write_bytes(b"candidate")
    runs: list[str] = []
    monkeypatch.setattr(gpu, "load_kernel", lambda path, spec: Path(path).name)

    def run_once(kernel, spec, host, poison_shared=True):
        runs.append(kernel)
        return {"dst": np.zeros(4, dtype=np.int32)}

    monkeypatch.setattr(check, "run_once", run_once)
    spec = load_spec(SPEC)
    assert check.check_pair(original, candidate, spec, sets=3).ok
    assert runs.count("a.cubin") == 4 and runs.count("b.cubin") == 3  # the first set's reference runs twice
    runs.clear()
    assert check.check_pair(original, candidate, spec, sets=3).ok
    assert runs == ["b.cubin"] * 3
    runs.clear()
    assert check.check_pair(original, candidate, spec, sets=2, first_set=50).ok  # new sets: judged again
    assert runs.count("a.cubin") == 3
    inputmemo.clear()
