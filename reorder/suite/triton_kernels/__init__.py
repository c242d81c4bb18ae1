"""The Triton kernels reorder is compared on, as families of (kernel, dtype) with shapes and configs.

Each family names its kernel, the shapes it is run at, the configs Triton's own tuning
chooses among (num_warps x num_stages, or x the `tl.range` stages of a load-only loop, as
the LOOP_STAGES constexpr), and how to build one call: arguments (tensors described, not
allocated, so a CPU test compiles them with stand-in tensors and the GPU script allocates
them with torch), constexprs, grid, output buffers, a torch reference and the bytes and
FLOPs a call must move (for the roofline). Within a family only the number of rows (or M, N,
K) changes, so every shape compiles to the same cubin per config (Triton specializes ints
on divisibility by 16 and on == 1, and every size here is a multiple of 16).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EPS = 1e-5
SLOPE = 0.01


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument to allocate: shape, numpy dtype name, 'in' (random) or 'out', and the
    standard deviation of its random contents (weights are drawn small enough that a K-long
    dot product stays well inside fp16's range); an integer input (an index) is drawn
    uniformly from [0, high)."""

    shape: tuple[int, ...]
    dtype: str
    role: str = "in"
    std: float = 1.0
    high: int = 0


@dataclass(frozen=True)
class Case:
    """One call of a family's kernel at one shape."""

    family: str
    shape: tuple[int, ...]
    kernel: Any  # the @triton.jit function
    args: tuple  # TensorArg or Python scalars, in parameter order
    constexprs: dict
    grid: tuple[int, ...]
    outputs: tuple[str, ...]
    reference: Callable[[dict], dict]  # torch tensors by name -> expected outputs by name
    bytes_moved: int
    flops: int = 0

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.kernel.arg_names[: len(self.args)])

    @property
    def inits(self) -> dict[str, dict]:
        """How a launch spec draws the inputs whose spread is not N(0, 1) (reorder.triton.launch)."""
        out: dict[str, dict] = {}
        for name, a in zip(self.names, self.args):
            if isinstance(a, TensorArg) and a.role == "in" and a.high:
                out[name] = {"dist": "integers", "low": 0, "high": a.high}
            elif isinstance(a, TensorArg) and a.role == "in" and a.std != 1.0:
                out[name] = {"dist": "normal", "mean": 0.0, "std": a.std}
        return out


@dataclass(frozen=True)
class Family:
    name: str
    dtype: str  # float16 | float32
    shapes: tuple[tuple[int, ...], ...]
    configs: tuple[dict, ...]
    make: Callable[[str, tuple[int, ...]], Case] = field(repr=False)
    tolerance: float | None = None  # rtol = atol of the math check; None: 1e-3 for fp32, 2e-2 for fp16

    @property
    def tol(self) -> float:
        return self.tolerance if self.tolerance is not None else (1e-3 if self.dtype == "float32" else 2e-2)

    def case(self, shape: tuple[int, ...]) -> Case:
        return self.make(self.dtype, shape)

    @property
    def tune_shape(self) -> tuple[int, ...]:
        """The shape reorder's search runs at (the middle one)."""
        return self.shapes[len(self.shapes) // 2]


def _size(dtype: str) -> int:
    return 2 if dtype == "float16" else 4


def _grid_configs(warps: tuple[int, ...], stages: tuple[int, ...], key: str) -> tuple[dict, ...]:
    return tuple(
        {"num_warps": w, key: s} if key != "num_stages" else {"num_warps": w, "num_stages": s}
        for w in warps
        for s in stages
    )


def softmax_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.softmax import softmax_rows

    rows, cols = shape

    def reference(t: dict) -> dict:
        import torch

        return {"y_ptr": torch.softmax(t["x_ptr"].float(), dim=-1)}

    return Case(
        "softmax",
        shape,
        softmax_rows,
        (TensorArg(shape, dtype), TensorArg(shape, dtype, "out"), cols, cols, cols),
        {"BLOCK": 2048},
        (rows,),
        ("y_ptr",),
        reference,
        2 * rows * cols * _size(dtype),
    )


def rmsnorm_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.rmsnorm import rmsnorm_row

    rows, cols = shape
    return Case(
        "rmsnorm_row",
        shape,
        rmsnorm_row,
        (TensorArg(shape, dtype), TensorArg((cols,), dtype), TensorArg(shape, dtype, "out"), cols, cols, cols, EPS),
        {"BLOCK": 4096},
        (rows,),
        ("y_ptr",),
        _rms_reference,
        (2 * rows + 1) * cols * _size(dtype),
    )


def rmsnorm_looped_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.rmsnorm import rmsnorm_looped

    rows, cols = shape
    return Case(
        "rmsnorm_looped",
        shape,
        rmsnorm_looped,
        (TensorArg(shape, dtype), TensorArg((cols,), dtype), TensorArg(shape, dtype, "out"), cols, cols, cols, EPS),
        {"BLOCK": 1024},
        (rows,),
        ("y_ptr",),
        _rms_reference,
        (2 * rows + 1) * cols * _size(dtype),
    )


def _rms_reference(t: dict) -> dict:
    import torch

    x = t["x_ptr"].float()
    return {"y_ptr": x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + EPS) * t["w_ptr"].float()}


def layernorm_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.layernorm import layernorm_looped

    rows, cols = shape

    def reference(t: dict) -> dict:
        import torch

        x = t["x_ptr"].float()
        mean = x.mean(dim=-1)
        rstd = torch.rsqrt(x.var(dim=-1, unbiased=False) + EPS)
        y = (x - mean[:, None]) * rstd[:, None] * t["w_ptr"].float() + t["b_ptr"].float()
        return {"y_ptr": y, "mean_ptr": mean, "rstd_ptr": rstd}

    args = (
        TensorArg(shape, dtype),
        TensorArg((cols,), dtype),
        TensorArg((cols,), dtype),
        TensorArg(shape, dtype, "out"),
        TensorArg((rows,), "float32", "out"),
        TensorArg((rows,), "float32", "out"),
        cols,
        cols,
        cols,
        EPS,
    )
    return Case(
        "layernorm",
        shape,
        layernorm_looped,
        args,
        {"BLOCK": 1024},
        (rows,),
        ("y_ptr", "mean_ptr", "rstd_ptr"),
        reference,
        (2 * rows + 2) * cols * _size(dtype) + 8 * rows,
    )


def matmul_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.matmul_leaky import matmul_leaky

    m, n, k = shape
    bm, bn = 128, 128

    def reference(t: dict) -> dict:
        import torch

        return {"c_ptr": torch.nn.functional.leaky_relu(t["a_ptr"].float() @ t["b_ptr"].float(), SLOPE)}

    args = (
        TensorArg((m, k), dtype),
        TensorArg((k, n), dtype),
        TensorArg((m, n), dtype, "out"),
        m,
        n,
        k,
        k,
        1,
        n,
        1,
        n,
        1,
        SLOPE,
    )
    grid = (-(-m // bm) * -(-n // bn),)
    return Case(
        "matmul_leaky",
        shape,
        matmul_leaky,
        args,
        {"BM": bm, "BN": bn, "BK": 64, "GROUP_M": 8},
        grid,
        ("c_ptr",),
        reference,
        (m * k + k * n + m * n) * _size(dtype),
        2 * m * n * k,
    )


def ffn_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from reorder.suite.triton_kernels.ffn import ffn_swiglu

    m, n, k = shape
    bm, bn = FFN_TILE

    def reference(t: dict) -> dict:
        import torch

        x = t["x_ptr"].float()
        normed = x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + EPS) * t["g_ptr"].float()
        gate, up = normed @ t["w1_ptr"].float(), normed @ t["w3_ptr"].float()
        return {"out_ptr": torch.nn.functional.silu(gate) * up}

    w_std = k**-0.5  # unit-variance gate and up
    args = (
        TensorArg((m, k), dtype),
        TensorArg((k,), dtype),
        TensorArg((k, n), dtype, std=w_std),
        TensorArg((k, n), dtype, std=w_std),
        TensorArg((m, n), dtype, "out"),
        m,
        n,
        k,
        k,
        n,
        n,
        EPS,
    )
    return Case(
        "ffn_swiglu",
        shape,
        ffn_swiglu,
        args,
        {"BM": bm, "BN": bn, "BK": 64},
        (-(-m // bm) * -(-n // bn),),
        ("out_ptr",),
        reference,
        (m * k + k + 2 * k * n + m * n) * _size(dtype),
        2 * 2 * m * n * k,
    )


FFN_TILE = (64, 64)
# B = 1: M tokens. The three asked for (M = N = 512, K = 512, 2048, 4096), extended over M and N.
FFN_SHAPES = tuple((m, n, k) for m in (128, 512, 2048) for n in (512, 1024) for k in (512, 1024, 2048, 4096))
ROW_WARPS = (4, 8, 16)
LOOP_STAGES = (1, 2, 3, 4)  # tl.range stages: Triton's own pipelining, up to the depth reorder's Prefetch reaches
FAMILIES: tuple[Family, ...] = tuple(
    family
    for dtype, short in (("float32", "fp32"), ("float16", "fp16"))
    for family in (
        Family(
            f"softmax_{short}",
            dtype,
            ((64, 32000), (512, 32000), (1024, 32000)),
            _grid_configs(ROW_WARPS, LOOP_STAGES, "LOOP_STAGES"),
            softmax_case,
        ),
        Family(
            f"rmsnorm_row_{short}",
            dtype,
            ((16, 4096), (1024, 4096), (8192, 4096)),
            tuple({"num_warps": w} for w in (2, 4, 8, 16)),
            rmsnorm_case,
        ),
        Family(
            f"rmsnorm_looped_{short}",
            dtype,
            ((16, 16384), (512, 16384), (2048, 16384)),
            _grid_configs((4, 8), LOOP_STAGES, "LOOP_STAGES"),
            rmsnorm_looped_case,
        ),
        Family(
            f"layernorm_{short}",
            dtype,
            ((16, 8192), (512, 8192), (2048, 8192)),
            _grid_configs((4, 8), LOOP_STAGES, "LOOP_STAGES"),
            layernorm_case,
        ),
    )
) + (
    Family(
        "matmul_leaky_fp16",
        "float16",
        ((512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048)),
        _grid_configs((4, 8), (2, 3, 4), "num_stages"),
        matmul_case,
        tolerance=5e-2,
    ),
    Family(
        "ffn_swiglu_fp16",
        "float16",
        FFN_SHAPES,
        _grid_configs((4, 8), (2, 3, 4), "num_stages"),
        ffn_case,
        tolerance=5e-2,
    ),
)


def family(name: str) -> Family:
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(f"no Triton kernel family {name!r} (have: {', '.join(f.name for f in FAMILIES)})")


# ---------------------------------------------------------------- arguments


class StandInTensor:
    """What Triton's JIT reads of a tensor argument (data_ptr, dtype), for compiling without a GPU."""

    def __init__(self, arg: TensorArg, address: int) -> None:
        self.shape = arg.shape
        self.dtype = f"torch.{arg.dtype}"
        self._address = address

    def data_ptr(self) -> int:
        return self._address

    def stride(self) -> tuple[int, ...]:
        out, step = [], 1
        for d in reversed(self.shape):
            out.append(step)
            step *= d
        return tuple(reversed(out))


def stand_in_args(case: Case) -> tuple:
    """The case's arguments with tensors replaced by 256-byte aligned stand-ins."""
    return tuple(
        StandInTensor(a, 0x10000 * (i + 1)) if isinstance(a, TensorArg) else a for i, a in enumerate(case.args)
    )


def torch_args(case: Case, device: str = "cuda", seed: int = 0) -> tuple[tuple, dict]:
    """(positional arguments, tensors by parameter name): inputs from N(0, 1), outputs empty."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    args, named = [], {}
    for name, a in zip(case.names, case.args):
        if isinstance(a, TensorArg):
            dtype = getattr(torch, a.dtype)
            if a.role != "in":
                t = torch.empty(a.shape, device=device, dtype=dtype)
            elif a.high:
                t = torch.randint(0, a.high, a.shape, generator=gen, device=device, dtype=dtype)
            else:
                t = (a.std * torch.randn(a.shape, generator=gen, device=device, dtype=torch.float32)).to(dtype)
            named[name] = t
            args.append(t)
        else:
            args.append(a)
    return tuple(args), named
