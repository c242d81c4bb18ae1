"""A noalias twin refuses a launch whose tensors overlap (reorder.triton.aliasing): the
in-place call a Liger-style backward makes, a shifted view; views of one buffer that do not
overlap pass, and the user's own pre_hook still runs after the guard."""

from __future__ import annotations

import pytest

from reorder.base.errors import InputError
from reorder.triton.aliasing import guarded, overlapping, span, user_hook
from reorder.triton.request import Request

triton = pytest.importorskip("triton")


class Strided:
    """What the guard reads of a tensor: its address, element size, shape and strides."""

    def __init__(self, address: int, shape: tuple[int, ...], stride: tuple[int, ...] | None = None, size: int = 4):
        self.address, self.shape, self.size = address, shape, size
        self._stride = stride or tuple(int(__import__("math").prod(shape[k + 1 :])) for k in range(len(shape)))

    def data_ptr(self) -> int:
        return self.address

    def element_size(self) -> int:
        return self.size

    def stride(self) -> tuple[int, ...]:
        return self._stride


def test_spans_and_overlaps():
    x = Strided(0x1000, (4, 8))
    assert span(x) == (0x1000, 0x1000 + 4 * 32)
    assert span(Strided(0x1000, (0, 8))) is None and span(3) is None and span(None) is None
    assert overlapping({"dy": x, "dx": Strided(0x1000, (4, 8)), "n": 8}) == ("dy", "dx")  # in place
    assert overlapping({"x": x, "y": Strided(0x1000 + 4 * 31, (4,))}) is not None  # shifted view
    assert overlapping({"x": x, "y": Strided(0x1000 + 4 * 32, (4, 8))}) is None  # back to back
    # the column slices of one (4, 24) allocation (a fused gate/up output): interleaved, never touching
    a, g, u = (Strided(0x1000 + 4 * 8 * k, (4, 8), (24, 1)) for k in range(3))
    assert overlapping({"a": a, "g": g, "u": u}) is None
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 7, (4, 8), (24, 1))}) == ("a", "g")  # one column shared
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 7 + 2, (4, 8), (24, 1))}) == ("a", "g")  # two bytes shared
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 8 + 2, (4, 8), (24, 1))}) is None  # misaligned, apart
    # other strides: a transposed view over the same bytes is refused without a proof
    assert overlapping({"x": Strided(0x1000, (8, 8)), "t": Strided(0x1000 + 4 * 64 - 4, (8, 8), (1, 8))}) is not None
    assert overlapping({"x": x, "n": 7, "eps": 1e-5, "none": None}) is None


def test_a_noalias_twin_refuses_overlapping_arguments_and_runs_the_users_hook():
    from reorder.triton.tune import _original_key, with_reorder

    seen = []

    def users(nargs):
        seen.append(sorted(nargs))

    plain = triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=users)
    configs = with_reorder([plain], Request(noalias=True))
    twins = configs[1:]
    assert twins and all(user_hook(t.pre_hook) is users and t.pre_hook is not users for t in twins)
    assert all(_original_key(t) == _original_key(plain) for t in twins)  # still paired with their original
    x = Strided(0x1000, (64,))
    twins[0].pre_hook({"x_ptr": x, "y_ptr": Strided(0x2000, (64,)), "BLOCK": 128})
    assert seen == [["BLOCK", "x_ptr", "y_ptr"]]
    with pytest.raises(InputError, match=r"arguments x_ptr and y_ptr share memory.*rt.Request\(\)"):
        twins[0].pre_hook({"x_ptr": x, "y_ptr": Strided(0x1000, (64,)), "BLOCK": 128})
    assert len(seen) == 1  # refused before the user's hook
    # without noalias nothing is promised, nothing is checked
    assert all(t.pre_hook is users for t in with_reorder([plain], Request())[1:])
    assert guarded(None)({"x": x}) is None
