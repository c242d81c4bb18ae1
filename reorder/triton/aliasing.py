"""A twin built under `noalias` never runs on arguments that share memory.

`rt.Request(noalias=True)` is a promise about every launch: no two pointer arguments
overlap, so a twin may move a load above a store to another buffer. The promise is easy to
break without noticing: an in-place call (Liger's RMSNorm backward passes dY as dX), a view
of the input as the output. A twin built on it would then read what the original read
after the store, before it: a silent wrong answer. So each noalias twin carries a pre_hook
that looks at the tensors of the launch first and refuses it, in one line naming the two
arguments, when two of them overlap in memory and the kernel may write one of them (views
of one buffer that do not overlap, such as the column slices of one allocation, are fine;
so are read-only arguments given the same tensor: reorder.triton.written reads the
kernel's source for its stores). The user's own pre_hook runs after it. Only tensors are
checked: a TMA descriptor's memory is not (its base is not among the launch's arguments);
no move relies on it, as the PTX analyses keep every TMA copy (`cp.async.bulk`) in place as
a full memory barrier.
The check costs about 1.5 us of Python per tensor argument on each launch of a noalias twin
(12 us for eight tensors on the 2-core developer host); a request without noalias has no
guard and no cost.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

from reorder.base.errors import InputError

Hook = Callable[[dict[str, Any]], Any]


def span(value: Any) -> tuple[int, int] | None:
    """The bytes [start, end) a strided tensor can touch; None for anything else or an empty one.
    (Every launch of a noalias twin pays for this: no exception on the common path.)"""
    if getattr(value, "data_ptr", None) is None or getattr(value, "stride", None) is None:
        return None
    try:
        shape, stride = tuple(value.shape), tuple(value.stride())
        start, size = int(value.data_ptr()), int(value.element_size())
    except (AttributeError, TypeError):
        return None
    if 0 in shape:
        return None
    reach = 0
    for n, s in zip(shape, stride):
        reach += (n - 1) * abs(s)
    return start, start + size * (reach + 1)


def overlapping(nargs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every two arguments whose tensors share a byte (each pair in the kernel's parameter order)."""
    tensors = []
    for name, value in nargs.items():
        found = span(value)
        if found is not None:
            tensors.append((found, name, value))
    if len(tensors) < 2:
        return []
    tensors.sort(key=lambda t: t[0])
    order = list(nargs)
    pairs = []
    for k, (a_span, a_name, a) in enumerate(tensors):
        for b_span, b_name, b in tensors[k + 1 :]:
            if b_span[0] >= a_span[1]:
                break
            if _share(a, b):
                pairs.append((a_name, b_name) if order.index(a_name) < order.index(b_name) else (b_name, a_name))
    return sorted(pairs, key=lambda p: (order.index(p[0]), order.index(p[1])))


def broken(
    nargs: Mapping[str, Any], kernel: Any = None, pairs: list[tuple[str, str]] | None = None
) -> tuple[str, str] | None:
    """Two overlapping arguments at least one of which the kernel may write (every overlapping
    pair when that cannot be told: no kernel, or reorder.triton.written cannot read it);
    `pairs`: overlapping(nargs) when the caller has it already."""
    pairs = overlapping(nargs) if pairs is None else pairs
    if not pairs:
        return None
    written = _written(kernel, [n for n, v in nargs.items() if span(v) is not None])
    return next((p for p in pairs if written is None or written & set(p)), None)


def _written(kernel: Any, tensors: list[str]) -> frozenset[str] | None:
    from reorder.triton.compile import jit_function
    from reorder.triton.written import written_args

    try:
        fn = jit_function(kernel) if kernel is not None else None
        src = fn.src if fn is not None else None
        bound = getattr(getattr(fn, "fn", None), "__globals__", {})
    except Exception:  # noqa: BLE001 - not a kernel reorder can read: every argument counts as written
        return None
    pure = frozenset(n for n, v in bound.items() if str(getattr(v, "__module__", "")).startswith("triton.language"))
    return written_args(src, tuple(tensors), pure) if isinstance(src, str) else None


def _autotuned_kernel() -> Any:
    """The kernel of the autotuner launching this config: Triton calls a config's pre_hook from
    its Autotuner's own methods, with no kernel among the arguments."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and hasattr(owner, "configs") and hasattr(owner, "fn"):
            return owner.fn
        frame = frame.f_back
    return None


def _share(a: Any, b: Any) -> bool:
    """Whether two tensors whose spans overlap share a byte. Exact for two views with the same
    strides and element size (slices of one allocation: the columns of a fused QKV or
    gate/up output interleave without touching); True otherwise (refusing is better than
    guessing)."""
    size = int(a.element_size())
    if size != int(b.element_size()) or tuple(a.stride()) != tuple(b.stride()):
        return True
    dims = sorted(
        ((abs(st) * size, na, nb) for st, na, nb in zip(a.stride(), a.shape, b.shape) if st and max(na, nb) > 1),
        reverse=True,
    )
    budget = [4096]
    return _meets(int(b.data_ptr()) - int(a.data_ptr()), dims, size, budget)


def _meets(delta: int, dims: list[tuple[int, int, int]], size: int, budget: list[int]) -> bool:
    """Some index difference e (e_k in [-(nb_k - 1), na_k - 1]) puts sum(e_k * stride_k)
    within an element of `delta` (bytes); the largest stride first, each digit bounded by what
    the smaller strides can still reach."""
    budget[0] -= 1
    if budget[0] < 0:
        return True
    if not dims:
        return abs(delta) < size
    (stride, na, nb), rest = dims[0], dims[1:]
    reach = sum((max(x, y) - 1) * s for s, x, y in rest) + size
    low = max(-(nb - 1), -((reach - delta) // stride) - 1)
    high = min(na - 1, (delta + reach) // stride + 1)
    return any(_meets(delta - e * stride, rest, size, budget) for e in range(low, high + 1))


def guarded(user_hook: Hook | None) -> Hook:
    """A noalias twin's pre_hook: refuse overlapping arguments, then run the user's hook."""

    def hook(nargs: dict[str, Any]) -> Any:
        pairs = overlapping(nargs)  # every launch: empty unless tensors overlap
        found = broken(nargs, _autotuned_kernel(), pairs) if pairs else None
        if found:
            raise InputError(
                f"arguments {found[0]} and {found[1]} share memory, but rt.Request(noalias=True) promised "
                "they do not (a twin may read one before the other is written): use rt.Request() for this kernel"
            )
        return user_hook(nargs) if user_hook is not None else None

    hook.reorder_guard = True  # type: ignore[attr-defined]
    hook.reorder_user_hook = user_hook  # type: ignore[attr-defined]
    return hook


def user_hook(hook: Hook | None) -> Hook | None:
    """The user's pre_hook behind a guard (the hook itself when it is not one)."""
    return hook.reorder_user_hook if getattr(hook, "reorder_guard", False) else hook  # type: ignore[union-attr]
