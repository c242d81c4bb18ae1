"""Large buffers draw in chunks, each from its own stream, in threads: the bytes are a pure
function of the spec and the set, whatever the number of threads (timing.inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from timing import inputs
from timing.params import BufferParam, Init


def _buffer(n: int, dist: str = "normal", dtype: str = "float16") -> BufferParam:
    args = {"normal": {"mean": 0.0, "std": 1.0}, "uniform": {"low": -1.0, "high": 1.0}}.get(dist, {"low": 0, "high": 7})
    return BufferParam("x", dtype, (n,), "in", Init(dist, tuple(sorted(args.items()))))


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(inputs, "CHUNK", 1000)


@pytest.mark.parametrize("dist", ["normal", "uniform", "integers"])
def test_a_large_buffer_is_its_chunks_each_from_its_own_stream(small_chunks, dist):
    p = _buffer(3500, dist)
    got = inputs.draw_buffer(p, [7, 1])
    for c, lo in enumerate(range(0, 3500, 1000)):
        n = min(1000, 3500 - lo)
        alone = inputs._draw(p, n, np.random.default_rng([7, 1, c])).astype(p.dtype)
        assert got[lo : lo + n].tobytes() == alone.tobytes()


def test_the_bytes_do_not_depend_on_the_threads(small_chunks, monkeypatch):
    p = _buffer(5003)
    many = inputs.draw_buffer(p, [3, 2])
    monkeypatch.setattr(inputs.os, "cpu_count", lambda: 1)
    assert inputs.draw_buffer(p, [3, 2]).tobytes() == many.tobytes()
    assert inputs.draw_buffer(p, [4, 2]).tobytes() != many.tobytes()  # another set, other bytes


def test_a_buffer_of_one_chunk_draws_as_one_stream(small_chunks):
    p = _buffer(1000)
    whole = np.random.default_rng([5, 1]).normal(0.0, 1.0, 1000).astype("float16")
    assert inputs.draw_buffer(p, [5, 1]).tobytes() == whole.tobytes()


def test_a_permutation_is_never_split(small_chunks):
    p = BufferParam("perm", "int64", (2500,), "in", Init("permutation", ()))
    got = inputs.draw_buffer(p, [1, 1])
    assert sorted(got.tolist()) == list(range(2500))
