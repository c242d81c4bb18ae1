"""Triton kernels written as a Triton user writes them, apart from the benchmark's own families
(reorder.suite.triton_kernels), to test reorder's one line on code it was not shaped around.

Five families (reorder.suite.triton_kernels' Family and Case values, so the same launch and
check code serves them):

- `xent_fp16`: cross-entropy forward, a `tl.range` loop with a block reduction per chunk
  (xent.py); one shape with GPT-2's vocabulary (50257: no int is a multiple of 16);
- `cumsum_fp16`: row prefix sums under `@triton.heuristics` (EVEN_N), a `tl.range` loop that
  stores every chunk (cumsum.py); one shape with EVEN_N false;
- `addnorm_fp16`: residual add then LayerNorm, writing h and reading it back twice, three
  `tl.range` loops (addnorm.py);
- `down_proj_fp16`: (silu(G) * U) @ W + bias + res, a GEMM with its activation fused in front
  and a residual epilogue, under `@triton.heuristics` (EVEN_K; one shape with EVEN_K false);
- `linear_gelu_fp16`: gelu(A @ W + bias), a GEMM with a fused epilogue (gemm.py).

Configs: num_warps x the `tl.range` stages 1-4 (LOOP_STAGES) for the loops, num_warps x
num_stages for the GEMMs; block sizes are fixed per family.
"""

from __future__ import annotations

from reorder.suite.triton_kernels import Case, Family, TensorArg

EPS = 1e-5
ROW_CONFIGS = tuple({"num_warps": w, "LOOP_STAGES": s} for w in (4, 8) for s in (1, 2, 3, 4))
GEMM_CONFIGS = tuple({"num_warps": w, "num_stages": s} for w in (4, 8) for s in (2, 3, 4))


def xent_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from benchmarks.triton_user.xent import xent_forward

    rows, vocab = shape

    def reference(t: dict) -> dict:
        import torch

        x = t["logits_ptr"].float()
        lse = torch.logsumexp(x, dim=-1)
        return {"loss_ptr": lse - x.gather(1, t["target_ptr"].long()[:, None])[:, 0], "lse_ptr": lse}

    args = (
        TensorArg(shape, dtype),
        TensorArg((rows,), "int32", high=vocab),
        TensorArg((rows,), "float32", "out"),
        TensorArg((rows,), "float32", "out"),
        vocab,
        vocab,
    )
    return Case(
        "xent",
        shape,
        xent_forward,
        args,
        {"BLOCK": 2048},
        (rows,),
        ("loss_ptr", "lse_ptr"),
        reference,
        rows * vocab * 2 + 12 * rows,
    )


def cumsum_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from benchmarks.triton_user.cumsum import cumsum_rows

    rows, cols = shape

    def reference(t: dict) -> dict:
        import torch

        return {"y_ptr": torch.cumsum(t["x_ptr"].float(), dim=-1)}

    args = (TensorArg(shape, dtype), TensorArg(shape, "float32", "out"), cols, cols, cols)
    return Case("cumsum", shape, cumsum_rows, args, {"BLOCK": 1024}, (rows,), ("y_ptr",), reference, rows * cols * 6)


def addnorm_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from benchmarks.triton_user.addnorm import add_layernorm

    rows, cols = shape

    def reference(t: dict) -> dict:
        import torch

        h = t["x_ptr"] + t["r_ptr"]
        hf = h.float()
        mean = hf.mean(dim=-1)
        rstd = torch.rsqrt(hf.var(dim=-1, unbiased=False) + EPS)
        y = (hf - mean[:, None]) * rstd[:, None] * t["w_ptr"].float() + t["b_ptr"].float()
        return {"h_ptr": h, "y_ptr": y, "mean_ptr": mean, "rstd_ptr": rstd}

    args = (
        TensorArg(shape, dtype),
        TensorArg(shape, dtype),
        TensorArg(shape, dtype, "out"),
        TensorArg((cols,), dtype),
        TensorArg((cols,), dtype),
        TensorArg(shape, dtype, "out"),
        TensorArg((rows,), "float32", "out"),
        TensorArg((rows,), "float32", "out"),
        cols,
        cols,
        EPS,
    )
    outputs = ("h_ptr", "y_ptr", "mean_ptr", "rstd_ptr")
    return Case(
        "addnorm",
        shape,
        add_layernorm,
        args,
        {"BLOCK": 1024},
        (rows,),
        outputs,
        reference,
        rows * cols * 2 * 6 + 4 * cols + 8 * rows,
    )


GEMM_TILE = {"BM": 64, "BN": 64, "BK": 64, "GROUP_M": 8}
GELU_TILE = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}


def _tiles(m: int, n: int, tile: dict) -> int:
    return -(-m // tile["BM"]) * -(-n // tile["BN"])


def down_proj_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from benchmarks.triton_user.gemm import down_proj

    m, n, k = shape

    def reference(t: dict) -> dict:
        import torch

        g, u = t["g_ptr"].float(), t["u_ptr"].float()
        act = (torch.nn.functional.silu(g) * u).half().float()
        return {"out_ptr": act @ t["w_ptr"].float() + t["bias_ptr"].float() + t["res_ptr"].float()}

    args = (
        TensorArg((m, k), dtype),
        TensorArg((m, k), dtype),
        TensorArg((k, n), dtype, std=k**-0.5),
        TensorArg((n,), dtype),
        TensorArg((m, n), dtype),
        TensorArg((m, n), dtype, "out"),
        m,
        n,
        k,
        k,
        n,
        n,
    )
    return Case(
        "down_proj",
        shape,
        down_proj,
        args,
        dict(GEMM_TILE),
        (_tiles(m, n, GEMM_TILE),),
        ("out_ptr",),
        reference,
        (2 * m * k + k * n + n + 2 * m * n) * 2,
        2 * m * n * k,
    )


def linear_gelu_case(dtype: str, shape: tuple[int, ...]) -> Case:
    from benchmarks.triton_user.gemm import linear_gelu

    m, n, k = shape

    def reference(t: dict) -> dict:
        import torch

        z = t["a_ptr"].float() @ t["w_ptr"].float() + t["bias_ptr"].float()
        return {"out_ptr": torch.nn.functional.gelu(z, approximate="tanh")}

    args = (
        TensorArg((m, k), dtype),
        TensorArg((k, n), dtype, std=k**-0.5),
        TensorArg((n,), dtype),
        TensorArg((m, n), dtype, "out"),
        m,
        n,
        k,
        k,
        n,
        n,
    )
    return Case(
        "linear_gelu",
        shape,
        linear_gelu,
        args,
        dict(GELU_TILE),
        (_tiles(m, n, GELU_TILE),),
        ("out_ptr",),
        reference,
        (m * k + k * n + n + m * n) * 2,
        2 * m * n * k,
    )


FAMILIES: tuple[Family, ...] = (
    Family("xent_fp16", "float16", ((512, 32000), (2048, 32000), (1024, 50257)), ROW_CONFIGS, xent_case),
    Family("cumsum_fp16", "float16", ((1024, 4096), (4096, 4096), (1000, 3000)), ROW_CONFIGS, cumsum_case),
    Family("addnorm_fp16", "float16", ((512, 8192), (2048, 8192), (4096, 4096)), ROW_CONFIGS, addnorm_case),
    Family(
        "down_proj_fp16",
        "float16",
        ((128, 1024, 4096), (512, 1024, 4096), (256, 1024, 2720)),
        GEMM_CONFIGS,
        down_proj_case,
        tolerance=5e-2,
    ),
    Family(
        "linear_gelu_fp16",
        "float16",
        ((512, 4096, 1024), (2048, 2048, 2048), (128, 4096, 4096)),
        GEMM_CONFIGS,
        linear_gelu_case,
        tolerance=5e-2,
    ),
)


def family(name: str) -> Family:
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(f"no family {name!r} (have: {', '.join(f.name for f in FAMILIES)})")
