"""A noalias twin refuses a launch whose tensors overlap (reorder.triton.aliasing): the
in-place call a Liger-style backward makes, a shifted view; views of one buffer that do not
overlap pass, and the user's own pre_hook still runs after the guard."""

from __future__ import annotations

import pytest

from reorder.base.errors import InputError
from reorder.triton.aliasing import broken, guarded, overlapping, span, user_hook
from reorder.triton.request import Request
from reorder.triton.written import written_args

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
    assert overlapping({"dy": x, "dx": Strided(0x1000, (4, 8)), "n": 8}) == [("dy", "dx")]  # in place
    assert overlapping({"x": x, "y": Strided(0x1000 + 4 * 31, (4,))})  # shifted view
    assert overlapping({"x": x, "y": Strided(0x1000 + 4 * 32, (4, 8))}) == []  # back to back
    # the column slices of one (4, 24) allocation (a fused gate/up output): interleaved, never touching
    a, g, u = (Strided(0x1000 + 4 * 8 * k, (4, 8), (24, 1)) for k in range(3))
    assert overlapping({"a": a, "g": g, "u": u}) == []
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 7, (4, 8), (24, 1))}) == [("a", "g")]  # one column shared
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 7 + 2, (4, 8), (24, 1))}) == [("a", "g")]  # two bytes shared
    assert overlapping({"a": a, "g": Strided(0x1000 + 4 * 8 + 2, (4, 8), (24, 1))}) == []  # misaligned, apart
    # other strides: a transposed view over the same bytes is refused without a proof
    assert overlapping({"x": Strided(0x1000, (8, 8)), "t": Strided(0x1000 + 4 * 64 - 4, (8, 8), (1, 8))})
    assert overlapping({"x": x, "n": 7, "eps": 1e-5, "none": None}) == []


def test_a_noalias_twin_refuses_overlapping_arguments_and_runs_the_users_hook():
    from reorder.triton.tune import original_key, with_reorder

    seen = []

    def users(nargs):
        seen.append(sorted(nargs))

    plain = triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=users)
    configs = with_reorder([plain], Request(noalias=True))
    twins = configs[1:]
    assert twins and all(user_hook(t.pre_hook) is users and t.pre_hook is not users for t in twins)
    assert all(original_key(t) == original_key(plain) for t in twins)  # still paired with their original
    x = Strided(0x1000, (64,))
    twins[0].pre_hook({"x_ptr": x, "y_ptr": Strided(0x2000, (64,)), "BLOCK": 128})
    assert seen == [["BLOCK", "x_ptr", "y_ptr"]]
    with pytest.raises(InputError, match=r"arguments x_ptr and y_ptr share memory.*rt.Request\(\)"):
        twins[0].pre_hook({"x_ptr": x, "y_ptr": Strided(0x1000, (64,)), "BLOCK": 128})
    assert len(seen) == 1  # refused before the user's hook
    # without noalias nothing is promised, nothing is checked
    assert all(t.pre_hook is users for t in with_reorder([plain], Request())[1:])
    assert guarded(None)({"x": x}) is None


KERNEL = """
@triton.jit
def k(q_ptr, k_ptr, v_ptr, out_ptr, hist_ptr, desc_o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = out_ptr + pid * n
    q = tl.load(q_ptr + tl.arange(0, BLOCK))
    kk = tl.load(k_ptr + tl.arange(0, BLOCK))
    row = v_ptr
    row += pid * n
    acc = q * kk + tl.load(row + tl.arange(0, BLOCK))
    tl.store(base + tl.arange(0, BLOCK), acc)
    tl.atomic_add(hist_ptr + pid, 1)
    desc_o.store([pid, 0], acc)
"""
TENSORS = ("q_ptr", "k_ptr", "v_ptr", "out_ptr", "hist_ptr", "desc_o")


def test_the_written_arguments_are_read_from_the_source():
    assert written_args(KERNEL, TENSORS) == frozenset({"out_ptr", "hist_ptr", "desc_o"})
    calls_out = KERNEL.replace("tl.store(base", "_my_store(base")  # a called function given a pointer: unknown
    assert written_args(calls_out, TENSORS) is None
    assert written_args("def k(:", TENSORS) is None
    # a loaded value is data: an index into the written buffer, or the operand of a pure call
    gather = KERNEL.replace("tl.atomic_add(hist_ptr + pid, 1)", "tl.atomic_add(hist_ptr + tl.load(q_ptr), 1)")
    assert written_args(gather, TENSORS) == frozenset({"out_ptr", "hist_ptr", "desc_o"})
    chased = KERNEL.replace("tl.atomic_add(hist_ptr + pid, 1)", "tl.store(tl.load(q_ptr), acc)")
    assert written_args(chased, TENSORS) is None  # a pointer read from memory
    called = KERNEL.replace("acc = q * kk", "acc = silu(q) * rsqrt(kk)")
    assert written_args(called, TENSORS, frozenset({"rsqrt"})) == written_args(KERNEL, TENSORS)
    given = KERNEL.replace("acc = q * kk", "acc = softplus(q_ptr) * kk")
    assert written_args(given, TENSORS) is None  # a called function given an argument's pointer


class Kernel:
    """What the guard reads of a JITFunction: its source (reorder.triton.compile.jit_function
    unwraps `.fn`; this stands for one through a stub that passes its isinstance check)."""

    def __init__(self, src):
        self.src = src


def test_read_only_arguments_may_share_a_tensor(monkeypatch):
    import reorder.triton.compile as compile_module

    monkeypatch.setattr(compile_module, "jit_function", lambda kernel: kernel)
    x, out = Strided(0x1000, (64,)), Strided(0x9000, (64,))
    qkv = {"q_ptr": x, "k_ptr": Strided(0x1000, (64,)), "v_ptr": Strided(0x1000, (64,)), "out_ptr": out, "n": 64}
    assert len(overlapping(qkv)) == 3
    assert broken(qkv, Kernel(KERNEL)) is None  # attention called as attn(x, x, x, out)
    assert broken(qkv, None) == ("q_ptr", "k_ptr")  # no kernel to read: every argument counts as written
    in_place = {
        **qkv,
        "k_ptr": Strided(0x2000, (64,)),
        "v_ptr": Strided(0x3000, (64,)),
        "out_ptr": Strided(0x1000, (64,)),
    }
    assert broken(in_place, Kernel(KERNEL)) == ("q_ptr", "out_ptr")


class Tuner:
    """Calls a config's pre_hook from its own method, as Triton's Autotuner does."""

    def __init__(self, fn):
        self.fn, self.configs = fn, []

    def run(self, hook, nargs):
        return hook(nargs)


def test_the_guard_finds_the_kernel_of_the_autotuner_calling_it(monkeypatch):
    import reorder.triton.compile as compile_module

    monkeypatch.setattr(compile_module, "jit_function", lambda kernel: kernel)
    x = Strided(0x1000, (64,))
    qkv = {"q_ptr": x, "k_ptr": Strided(0x1000, (64,)), "v_ptr": x, "out_ptr": Strided(0x9000, (64,))}
    guard = guarded(None)
    assert Tuner(Kernel(KERNEL)).run(guard, qkv) is None  # read-only arguments share x: launched
    with pytest.raises(InputError, match="q_ptr and out_ptr share memory"):
        Tuner(Kernel(KERNEL)).run(guard, {**qkv, "out_ptr": Strided(0x1000, (64,))})
