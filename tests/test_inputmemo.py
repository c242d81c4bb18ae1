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
    first = check.check_pair(original, candidate, spec, sets=3)
    assert first.ok and first.references == 4 and len(first.seconds) == 1
    assert runs.count("a.cubin") == 4 and runs.count("b.cubin") == 3  # the first set's reference runs twice
    runs.clear()
    again = check.check_pair(original, candidate, spec, sets=3)
    assert again.ok and again.references == 0
    assert runs == ["b.cubin"] * 3
    runs.clear()
    assert check.check_pair(original, candidate, spec, sets=2, first_set=50).ok  # new sets: judged again
    assert runs.count("a.cubin") == 3
    inputmemo.clear()


def test_same_bytes_is_byte_equality_not_value_equality() -> None:
    """The fast path of the byte check: -0.0 is not 0.0, one NaN payload is not another, and an
    odd-sized buffer is compared to its last byte."""
    from timing.check import compare_outputs, same_bytes

    x = np.linspace(-1, 1, 4099, dtype=np.float32)
    assert same_bytes(x, x.copy())
    assert not same_bytes(np.zeros(3, np.float32), np.array([0.0, -0.0, 0.0], np.float32))
    nan = np.array([np.nan], np.float32)
    assert not same_bytes(nan, nan.view(np.uint32).__add__(1).view(np.float32))
    odd = np.arange(7, dtype=np.uint8)
    assert not same_bytes(odd, np.r_[odd[:6], 9].astype(np.uint8))
    found = compare_outputs({"y": x}, {"y": np.r_[x[:-1], np.float32(2.0)]})
    assert found is not None and found.flat_index == 4098 and found.n_differing == 1
