"""The kernels of Triton's own tutorials (python/tutorials of triton-lang/triton, the tree the
3.6 release was cut from) as the tutorials launch them, each under an autotuner: the configs
the tutorial declares where it autotunes (a few of them), otherwise the num_warps /
num_stages it launches with first and one or two neighbours. The kernels come from the
upstream files in TUTORIALS_SRC through tutorials.load (never copied here).

A case: (name, kernel (the bare JITFunction), args, configs, grid, autotune extras (key,
reset_to_zero, restore_value, prune_configs_by), outputs (the buffers rt.verify poisons),
a check (the outputs against torch: (worst error, tolerance)), a reset run before each launch,
and the keywords the tutorial passes by name (`constexprs`; for fused attention they include
N_CTX, which its prune function reads from the launch keywords)).

Left out: 08 grouped GEMM. Its kernels read the A/B/C addresses from a device table of
pointers; reorder's byte check and paired timing draw every buffer afresh, so that table would
hold random numbers, and the launches would read and write wild addresses.
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
import triton
import tutorials

from benchmarks.one_line_study import Case
from benchmarks.one_line_study import rel_error as _rel

C = triton.Config


def _bare(fn):
    """The JITFunction under a tutorial's own @triton.autotune (its configs are chosen here)."""
    return getattr(fn, "fn", fn)


def _sms(dev: str) -> int:
    return torch.cuda.get_device_properties(dev).multi_processor_count if dev == "cuda" else tutorials.TARGET_SMS


def _pick(configs, *wanted):
    """The tutorial's configs matching (kwargs subset, num_stages, num_warps), in the order asked."""
    out = []
    for kw, stages, warps in wanted:
        hit = [
            c
            for c in configs
            if all(c.kwargs.get(k) == v for k, v in kw.items()) and c.num_stages == stages and c.num_warps == warps
        ]
        if not hit:
            raise LookupError(f"the tutorial declares no config {kw} num_stages={stages} num_warps={warps}")
        out.append(hit[0])
    return out


def softmax(dev: str = "cuda", rows: int = 4096, cols: int = 4096) -> Case:
    """02: the persistent fused softmax (each program walks rows with tl.range(num_stages=...)),
    launched as the tutorial launches it: 8 warps, num_stages 4 where shared memory exceeds
    200 KB (also the kernel's num_stages argument), and as many programs as its occupancy
    estimate allows. The autotuner's configs set both num_stages's."""
    m = tutorials.load("02-fused-softmax", dev)
    x = torch.randn(rows, cols, device=dev)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps, stages = 8, 4
    if dev == "cuda":  # the tutorial's own program count for its launch
        props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
        stages = 4 if props["max_shared_mem"] > 200000 else 2
        k = m.softmax_kernel.warmup(
            y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=block, num_stages=stages, num_warps=warps, grid=(1,)
        )
        k._init_handles()
        occupancy = props["max_num_regs"] // (k.n_regs * props["warpSize"] * warps)
        occupancy = min(occupancy, props["max_shared_mem"] // max(k.metadata.shared, 1))
        programs = min(props["multiprocessor_count"] * occupancy, rows)
    else:
        programs = min(tutorials.TARGET_SMS * 4, rows)

    def check():
        return _rel(y, torch.softmax(x, -1)), 1e-3

    return Case(
        f"softmax {rows}x{cols}",
        m.softmax_kernel,
        (y, x, x.stride(0), y.stride(0), rows, cols),
        [
            C({}, num_warps=warps, num_stages=stages),
            C({}, num_warps=4, num_stages=stages),
            C({}, num_warps=warps, num_stages=2),
        ],
        (programs, 1, 1),
        {"key": ["n_rows", "n_cols"]},
        ["output_ptr"],
        check,
        constexprs={"BLOCK_SIZE": block},
    )


def matmul(dev: str = "cuda", M: int = 4096, N: int = 4096, K: int = 4096) -> Case:
    """03: the fp16 matmul with its fused leaky_relu, under the first three of the tutorial's
    CUDA autotune configs (128x256x64 s3 w8, 64x256x32 s4 w4, 128x128x32 s4 w4)."""
    m = tutorials.load("03-matrix-multiplication", dev)
    a = torch.rand(M, K, device=dev, dtype=torch.float16) - 0.5
    b = torch.rand(K, N, device=dev, dtype=torch.float16) - 0.5
    c = torch.empty(M, N, device=dev, dtype=torch.float16)

    def check():
        want = a.float() @ b.float()
        return _rel(c, torch.where(want >= 0, want, 0.01 * want)), 1e-2

    return Case(
        f"matmul_leaky_relu {M}x{N}x{K}",
        _bare(m.matmul_kernel),
        (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)),
        list(m.matmul_kernel.configs)[:3],
        lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),),
        {"key": ["M", "N", "K"]},
        ["c_ptr"],
        check,
        constexprs={"ACTIVATION": "leaky_relu"},
    )


def _ln_inputs(dev: str, rows: int, cols: int):
    """The tutorial's test data: x = -2.3 + 0.5 N(0,1), weight and bias U(0,1), dy = 0.1 N(0,1), fp16."""
    x = -2.3 + 0.5 * torch.randn(rows, cols, device=dev, dtype=torch.float16)
    w, b = (torch.rand(cols, device=dev, dtype=torch.float16) for _ in range(2))
    dy = 0.1 * torch.randn(rows, cols, device=dev, dtype=torch.float16)
    return x, w, b, dy


def _ln_settings(cols: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) as the tutorial's forward picks them (fp16)."""
    block = min(65536 // 2, triton.next_power_of_2(cols))
    return block, min(max(block // 256, 1), 8)


def _ln_group(cols: int) -> int:
    """The tutorial's number of partial dw/db rows (its GROUP_SIZE_M)."""
    return 256 if cols <= 1024 else 128 if cols <= 4096 else 96 if cols <= 8192 else 64


def _warps_and_neighbours(warps: int) -> list:
    return [C({}, num_warps=w) for w in (warps, max(warps // 2, 1), warps * 2)]


def layer_norm_fwd(dev: str = "cuda", rows: int = 4096, cols: int = 8192) -> Case:
    """05: the fused forward (three passes over each row), launched with the tutorial's
    BLOCK_SIZE and num_warps, then half and twice the warps."""
    m = tutorials.load("05-layer-norm", dev)
    x, w, b, _ = _ln_inputs(dev, rows, cols)
    y = torch.empty_like(x)
    mean, rstd = (torch.empty(rows, device=dev) for _ in range(2))
    block, warps = _ln_settings(cols)

    def check():
        want = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), 1e-5)
        xf = x.float()
        return max(
            _rel(y, want), _rel(mean, xf.mean(-1)), _rel(rstd, torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5))
        ), 1e-2

    return Case(
        f"layer_norm_fwd {rows}x{cols}",
        m._layer_norm_fwd_fused,
        (x, y, w, b, mean, rstd, x.stride(0), cols, 1e-5),
        _warps_and_neighbours(warps),
        (rows,),
        {"key": ["N"]},
        ["Y", "Mean", "Rstd"],
        check,
        constexprs={"BLOCK_SIZE": block},
    )


def layer_norm_bwd_dx(dev: str = "cuda", rows: int = 4096, cols: int = 8192) -> Case:
    """05: `_layer_norm_bwd_dx_fused`: dx per row, and each row's dw/db partial sums added into
    one of GROUP_SIZE_M rows under a spin lock (tl.atomic_cas on Lock; Count = Lock +
    GROUP_SIZE_M says whether the row was written yet). Lock and Count must be zero before
    every launch: reset() and the autotuner's reset_to_zero. The order in which programs take a
    lock is the hardware's, so the fp16 partial sums DW/DB may differ in their last bits from
    run to run (a byte check of DW/DB can differ for that reason alone); DX does not."""
    m = tutorials.load("05-layer-norm", dev)
    x, w, _, dy = _ln_inputs(dev, rows, cols)
    xf = x.float()
    mean, rstd = xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5)
    block, warps = _ln_settings(cols)
    group = _ln_group(cols)
    locks = torch.zeros(2 * group, device=dev, dtype=torch.int32)
    dw_part, db_part = (torch.zeros(group, cols, device=dev, dtype=torch.float16) for _ in range(2))
    dx = torch.empty_like(dy)

    def check():
        xh = (xf - mean[:, None]) * rstd[:, None]
        wdy = w.float() * dy.float()
        c1, c2 = (xh * wdy).mean(-1, keepdim=True), wdy.mean(-1, keepdim=True)
        want_dx = (wdy - (xh * c1 + c2)) * rstd[:, None]
        used = min(group, rows)
        return max(
            _rel(dx, want_dx),
            _rel(dw_part[:used].float().sum(0), (dy.float() * xh).sum(0)),
            _rel(db_part[:used].float().sum(0), dy.float().sum(0)),
        ), 2e-2

    return Case(
        f"layer_norm_bwd_dx {rows}x{cols}",
        m._layer_norm_bwd_dx_fused,
        (dx, dy, dw_part, db_part, x, w, mean, rstd, locks, x.stride(0), cols),
        _warps_and_neighbours(warps),
        (rows,),
        {"key": ["N"], "reset_to_zero": ["Lock"]},
        ["DX"],
        check,
        reset=locks.zero_,
        constexprs={"GROUP_SIZE_M": group, "BLOCK_SIZE_N": block},
    )


def layer_norm_bwd_dwdb(dev: str = "cuda", cols: int = 8192) -> Case:
    """05: `_layer_norm_bwd_dwdb`, the sum of the GROUP_SIZE_M partial rows, launched as the
    tutorial launches it (BLOCK_SIZE_M 32, BLOCK_SIZE_N 128, default 4 warps), then 2 and 8 warps."""
    m = tutorials.load("05-layer-norm", dev)
    group = _ln_group(cols)
    dw_part, db_part = (0.1 * torch.randn(group, cols, device=dev, dtype=torch.float16) for _ in range(2))
    dw, db = (torch.empty(cols, device=dev, dtype=torch.float16) for _ in range(2))

    def check():
        return max(_rel(dw, dw_part.float().sum(0)), _rel(db, db_part.float().sum(0))), 1e-2

    return Case(
        f"layer_norm_bwd_dwdb {group}x{cols}",
        m._layer_norm_bwd_dwdb,
        (dw_part, db_part, dw, db, group, cols),
        _warps_and_neighbours(4),
        (triton.cdiv(cols, 128),),
        {"key": ["N"]},
        ["FINAL_DW", "FINAL_DB"],
        check,
        constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128},
    )


def attention_fwd(dev: str = "cuda", Z: int = 4, H: int = 16, N_CTX: int = 1024, HEAD_DIM: int = 128) -> Case:
    """06: `_attn_fwd`, causal, fp16, as the tutorial launches it on Hopper without warp
    specialization: host-side TMA descriptors (TensorDescriptor with a dummy block shape that
    each config's pre_hook `_host_descriptor_pre_hook` sets), the tutorial's key and its
    `prune_configs_by` (`prune_invalid_configs`, which reads N_CTX from the launch keywords).
    Three of its declared configs, each with BLOCK_M >= BLOCK_N (in this version the prune
    function does not yet drop BLOCK_M < BLOCK_N for causal, which gives wrong results; upstream
    fixed that after the 3.6 cut, #8853)."""
    m = tutorials.load("06-fused-attention", dev)
    from triton.tools.tensor_descriptor import TensorDescriptor

    q, k, v = (torch.randn(Z, H, N_CTX, HEAD_DIM, device=dev, dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(Z, H, N_CTX, device=dev)
    rows = Z * H * N_CTX
    descs = [
        TensorDescriptor(t, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[1, 1]) for t in (q, k, v, o)
    ]
    sm_scale = 0.5
    hopper = torch.cuda.get_device_capability(dev)[0] == 9 if dev == "cuda" else tutorials.TARGET_CAPABILITY[0] == 9
    configs = _pick(
        m._attn_fwd.configs,
        ({"BLOCK_M": 128, "BLOCK_N": 64}, 2, 4),
        ({"BLOCK_M": 128, "BLOCK_N": 64}, 3, 4),
        ({"BLOCK_M": 128, "BLOCK_N": 128}, 2, 8),
    )

    def check():
        want = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float(), v.float(), is_causal=True, scale=sm_scale
        )
        s = (q.float() @ k.float().transpose(-1, -2)) * sm_scale
        s = s.masked_fill(torch.ones(N_CTX, N_CTX, device=dev, dtype=torch.bool).triu(1), float("-inf"))
        want_m = torch.logsumexp(s, -1) / math.log(2)  # the kernel keeps log2-sum-exp2 of the scaled scores
        return max(_rel(o, want), _rel(lse, want_m)), 2e-2

    return Case(
        f"attention_fwd causal {Z}x{H}x{N_CTX}x{HEAD_DIM}",
        _bare(m._attn_fwd),
        (sm_scale, lse, Z, H, *descs),
        configs,
        lambda meta: (triton.cdiv(N_CTX, meta["BLOCK_M"]), Z * H, 1),
        {
            "key": ["N_CTX", "HEAD_DIM", "FP8_OUTPUT", "warp_specialize"],
            "prune_configs_by": {"early_config_prune": m.prune_invalid_configs},
        },
        ["M"],
        check,
        constexprs={
            "N_CTX": N_CTX,
            "HEAD_DIM": HEAD_DIM,
            "FP8_OUTPUT": False,
            "STAGE": 3,
            "warp_specialize": False,
            "IS_HOPPER": hopper,
        },
    )


def _mm_inputs(dev: str, M: int, N: int, K: int):
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    return a, b, torch.empty(M, N, device=dev, dtype=torch.float16)


def persistent_matmul(dev: str = "cuda", M: int = 4096, N: int = 4096, K: int = 4096) -> Case:
    """09: `matmul_kernel_persistent` (pointers, no TMA: one program per SM walking its tiles
    with tl.range(flatten=True)), fp16, under three of the tutorial's configs."""
    m = tutorials.load("09-persistent-matmul", dev)
    a, b, c = _mm_inputs(dev, M, N, K)
    sms = _sms(dev)
    configs = _pick(
        m.matmul_kernel_persistent.configs,
        ({"BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64}, 3, 8),
        ({"BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64}, 3, 4),
        ({"BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64}, 4, 8),
    )

    def check():
        return _rel(c, a.float() @ b.float()), 1e-2

    return Case(
        f"persistent_matmul {M}x{N}x{K}",
        _bare(m.matmul_kernel_persistent),
        (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)),
        configs,
        lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])),),
        {"key": ["M", "N", "K"]},
        ["c_ptr"],
        check,
        constexprs={"NUM_SMS": sms},
    )


def tma_persistent_matmul(dev: str = "cuda", M: int = 4096, N: int = 4096, K: int = 4096) -> Case:
    """09: `matmul_kernel_tma_persistent`, fp16, B given as (N, K): host-side TMA descriptors
    whose block shapes each config's pre_hook (`matmul_tma_set_block_size_hook`) sets, without
    warp specialization (on Hopper the tutorial's kernel software-pipelines); three of its
    configs, one with the subtiled epilogue."""
    m = tutorials.load("09-persistent-matmul", dev)
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, bk, c = _mm_inputs(dev, M, N, K)
    b = bk.T.contiguous()
    descs = [TensorDescriptor.from_tensor(t, [1, 1]) for t in (a, b, c)]
    sms = _sms(dev)
    configs = _pick(
        m.matmul_kernel_tma_persistent.configs,
        ({"BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "EPILOGUE_SUBTILE": True}, 3, 8),
        ({"BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "EPILOGUE_SUBTILE": False}, 4, 4),
        ({"BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "EPILOGUE_SUBTILE": False}, 3, 8),
    )

    def check():
        return _rel(c, a.float() @ b.float().T), 1e-2

    return Case(
        f"tma_persistent_matmul {M}x{N}x{K}",
        _bare(m.matmul_kernel_tma_persistent),
        (*descs, M, N, K),
        configs,
        lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])),),
        {"key": ["M", "N", "K", "WARP_SPECIALIZE"]},
        [],
        check,
        constexprs={"FP8_OUTPUT": False, "NUM_SMS": sms, "WARP_SPECIALIZE": False},
    )


CASES = (
    softmax,
    matmul,
    layer_norm_fwd,
    layer_norm_bwd_dx,
    layer_norm_bwd_dwdb,
    attention_fwd,
    persistent_matmul,
    tma_persistent_matmul,
)
