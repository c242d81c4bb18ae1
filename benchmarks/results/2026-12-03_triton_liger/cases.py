"""Liger-Kernel's Triton kernels as its own ops launch them, each under an autotuner: the
configs Liger declares where it autotunes (DyT), otherwise the num_warps Liger's
`calculate_settings` picks and its neighbours. The kernels are imported from a Liger-Kernel
checkout (LIGER_SRC: its `src` folder), never copied here.

A case: (name, kernel (the bare JITFunction), args, configs, grid, autotune extras (key,
reset_to_zero, restore_value), outputs (the buffers rt.verify poisons or compares), a check
(the outputs against torch: (worst error, tolerance)), buffers to reset before each run).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.environ.get("LIGER_SRC", "/tmp/liger/src"))

import torch  # noqa: E402
import triton  # noqa: E402

from benchmarks.one_line_study import Case  # noqa: E402
from benchmarks.one_line_study import rel_error as _rel  # noqa: E402

C = triton.Config


def _bare(fn):
    """The JITFunction under Liger's own @triton.autotune (its configs are the study's)."""
    return getattr(fn, "fn", fn)


def dyt_fwd(dev: str = "cuda", M: int = 4096, N: int = 4096) -> Case:
    from liger_kernel.ops import dyt

    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
    alpha = torch.full((1,), 0.5, device=dev)
    gamma, beta = (torch.randn(N, device=dev, dtype=torch.bfloat16) for _ in range(2))
    y = torch.empty_like(x)

    def check():
        want = torch.tanh(0.5 * x.float()) * gamma.float() + beta.float()
        return _rel(y, want), 2e-2

    return Case(
        f"dyt_fwd {M}x{N}", _bare(dyt._dyt_fwd_kernel), (x, y, alpha, gamma, beta, True, N),
        list(dyt._dyt_fwd_kernel.configs), lambda m: (triton.cdiv(N, m["BLOCK_N"]), M),
        {"key": ["N"]}, ["Y"], check,
    )


def dyt_bwd(dev: str = "cuda", M: int = 4096, N: int = 4096) -> Case:
    from liger_kernel.ops import dyt

    sms = torch.cuda.get_device_properties(dev).multi_processor_count if dev == "cuda" else 132
    x, dy = (torch.randn(M, N, device=dev, dtype=torch.bfloat16) for _ in range(2))
    alpha = torch.full((1,), 0.5, device=dev)
    gamma = torch.randn(N, device=dev, dtype=torch.bfloat16)
    dx = torch.empty_like(dy)
    da = torch.zeros(sms, triton.cdiv(N, 512), device=dev)
    dg, db = (torch.empty(sms, N, device=dev) for _ in range(2))

    def check():
        t = torch.tanh(0.5 * x.float())
        tmp = (1 - t * t) * dy.float() * gamma.float()
        return max(_rel(dx, 0.5 * tmp), _rel(dg.sum(0), (dy.float() * t).sum(0)), _rel(db.sum(0), dy.float().sum(0))), 2e-2

    return Case(
        f"dyt_bwd {M}x{N}", _bare(dyt._dyt_bwd_kernel), (dy, dx, da, dg, db, x, alpha, gamma, True, M, N),
        list(dyt._dyt_bwd_kernel.configs), lambda m: (triton.cdiv(N, m["BLOCK_N"]), sms),
        {"key": ["N"], "reset_to_zero": ["DA"]}, ["DX", "DG", "DB"], check, reset=da.zero_,
    )


def rms_norm_bwd(dev: str = "cuda", rows: int = 8192, cols: int = 4096) -> Case:
    from liger_kernel.ops import rms_norm
    from liger_kernel.ops.utils import torch_to_triton_dtype

    sms = torch.cuda.get_device_properties(dev).multi_processor_count if dev == "cuda" else 132
    x, dy = (torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) for _ in range(2))
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
    dx = torch.zeros_like(dy)
    dw = torch.empty(sms, cols, device=dev)
    per = triton.cdiv(rows, sms)
    args = (dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), torch_to_triton_dtype[x.dtype], w, w.stride(0),
            rstd, rstd.stride(0), dw, dw.stride(0), rows, cols, 0.0, per, 0)  # casting mode llama

    def check():
        xf = x.float()
        xn = (xf * rstd[:, None]).to(torch.bfloat16).float()
        gw = dy.float() * w.float()
        want_dw = (dy.float() * xn).sum(0)
        want_dx = rstd[:, None] * (gw - rstd[:, None] ** 2 * (gw * xf).mean(-1, keepdim=True) * xf)
        return max(_rel(dx, want_dx), _rel(dw.sum(0), want_dw)), 2e-2

    return Case(
        f"rms_norm_bwd {rows}x{cols}", rms_norm._rms_norm_backward_kernel, args,
        [C({}, num_warps=w) for w in (4, 8, 16)], (sms,),
        {"key": ["n_cols"]}, ["dX_ptr", "dW_ptr"], check,
        constexprs={"elementwise_affine": True, "BLOCK_SIZE": triton.next_power_of_2(cols)},
    )


def cross_entropy(dev: str = "cuda", rows: int = 1024, vocab: int = 128256) -> Case:
    from liger_kernel.ops import cross_entropy as ce

    x0 = torch.randn(rows, vocab, device=dev, dtype=torch.bfloat16)
    x = x0.clone()
    y = torch.randint(0, vocab, (rows,), device=dev)
    loss, z = torch.zeros(rows, device=dev), torch.zeros(rows, device=dev)
    acc, pred = torch.zeros(rows, device=dev), torch.zeros(rows, device=dev, dtype=torch.int64)
    args = (x, x.stride(-2), y, y.stride(-1), None, loss, z, loss.stride(-1), acc, 0, pred, 0, vocab, float(rows),
            float(rows), 0.0, -100)  # no class weights: None, as Liger passes them
    const = dict(lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None, RETURN_Z_LOSS=False,
                 RETURN_TOKEN_ACCURACY=False, RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=32768, HAS_WEIGHT=False,
                 HAS_SOFTCAPPING=False, HAS_GRADIENTS=True)

    def reset():
        x.copy_(x0)

    def check():
        xf = x0.float()
        lse = torch.logsumexp(xf, -1)
        want_loss = (lse - xf.gather(1, y[:, None])[:, 0]) / rows
        grad = torch.softmax(xf, -1)
        grad[torch.arange(rows, device=dev), y] -= 1
        grad /= rows
        return max(_rel(loss, want_loss), _rel(x, grad)), 2e-2

    return Case(
        f"cross_entropy {rows}x{vocab}", ce.liger_cross_entropy_kernel, args,
        [C({}, num_warps=w) for w in (8, 16, 32)], (rows,),
        {"key": ["n_cols"], "restore_value": ["X_ptr"]}, ["loss_ptr"], check, reset=reset, constexprs=const,
    )


def swiglu_mlp(dev: str = "cuda") -> Case:
    """Liger's fused SwiGLU MLP up-projection (TMA descriptors made by the host, set by each
    config's pre_hook): the first four of its declared configs."""
    from liger_kernel.ops import mlp
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, S, dim, hidden = 1, 2048, 2048, 5632
    inp = torch.randn(B, S, dim, device=dev, dtype=torch.bfloat16) / 16
    wg, wu = (torch.randn(hidden, dim, device=dev, dtype=torch.bfloat16) / 16 for _ in range(2))
    agu = torch.empty(B, S, 3 * hidden, device=dev, dtype=torch.bfloat16)
    a, g, u = agu[..., :hidden], agu[..., hidden:2 * hidden], agu[..., 2 * hidden:]
    d3, d2 = [1, 1, 1], [1, 1]
    descs = (TensorDescriptor.from_tensor(inp, d3, padding="zero"), TensorDescriptor.from_tensor(wg, d2, padding="zero"),
             TensorDescriptor.from_tensor(wu, d2, padding="zero"), TensorDescriptor.from_tensor(a, d3, padding="zero"),
             TensorDescriptor.from_tensor(g, d3, padding="zero"), TensorDescriptor.from_tensor(u, d3, padding="zero"))
    args = (*descs, S, dim, hidden, mlp.get_bucket_m(B * S))

    def check():
        gg, uu = inp.float() @ wg.float().T, inp.float() @ wu.float().T
        return _rel(a, gg * torch.sigmoid(gg) * uu), 2e-2

    return Case(
        f"swiglu_mlp {S}x{dim}x{hidden}", _bare(mlp._swiglu_kernel_forward), args, list(mlp._swiglu_kernel_forward.configs)[:4],
        lambda m: (triton.cdiv(S, m["BLOCK_M"]) * triton.cdiv(hidden, m["BLOCK_N"]), B),
        {"key": ["dim", "hidden_dim", "bucket_M"]}, [], check, constexprs={"gate_multiplier": 1.0},
    )


def layer_norm_bwd(dev: str = "cuda", rows: int = 8192, cols: int = 4096) -> Case:
    from liger_kernel.ops import layer_norm

    sms = torch.cuda.get_device_properties(dev).multi_processor_count if dev == "cuda" else 132
    x, dy = (torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) for _ in range(2))
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    mean, rstd = x.float().mean(-1), torch.rsqrt(x.float().var(-1, unbiased=False) + 1e-6)
    dx = torch.empty_like(x)
    dw, db = (torch.empty(sms, cols, device=dev) for _ in range(2))
    per = triton.cdiv(rows, sms)
    args = (x, x.stride(0), w, mean, mean.stride(0), rstd, rstd.stride(0), dx, dx.stride(0), dw, dw.stride(0), db,
            db.stride(0), dy, dy.stride(0), rows, cols)

    def check():
        xh = (x.float() - mean[:, None]) * rstd[:, None]
        wdy = w.float() * dy.float()
        c1, c2 = (xh * wdy).mean(-1, keepdim=True), wdy.mean(-1, keepdim=True)
        want_dx = (wdy - (xh * c1 + c2)) * rstd[:, None]
        return max(_rel(dx, want_dx), _rel(dw.sum(0), (dy.float() * xh).sum(0)), _rel(db.sum(0), dy.float().sum(0))), 2e-2

    return Case(
        f"layer_norm_bwd {rows}x{cols}", layer_norm._layer_norm_backward_kernel, args,
        [C({}, num_warps=w) for w in (4, 8, 16)], (sms,), {"key": ["n_cols"]}, ["DX_ptr", "DW_ptr", "DB_ptr"], check,
        constexprs={"rows_per_program": per, "BLOCK_SIZE": triton.next_power_of_2(cols)},
    )


def kl_div(dev: str = "cuda", rows: int = 1024, vocab: int = 128256) -> Case:
    from liger_kernel.ops import kl_div as kl

    y = torch.log_softmax(torch.randn(rows, vocab, device=dev), -1)
    gt = torch.softmax(torch.randn(rows, vocab, device=dev), -1)
    loss = torch.empty(rows, device=dev)
    block = min(kl.MAX_FUSED_SIZE, triton.next_power_of_2(vocab))

    def check():
        want = (gt * (torch.log(gt.clamp_min(1e-10)) - y)).sum(-1)
        return _rel(loss, want), 2e-2

    return Case(
        f"kl_div {rows}x{vocab}", kl._kldiv_kernel_forward, (y, y.stride(0), gt, gt.stride(0), loss, loss.stride(0), vocab, 1e-10),
        [C({}, num_warps=w) for w in (8, 16, 32)], (rows,), {"key": ["n_cols"]}, ["loss_ptr"], check,
        constexprs={"BLOCK_SIZE": block, "log_target": False, "reduction": 3},
    )


def rms_norm_fwd(dev: str = "cuda", rows: int = 8192, cols: int = 4096) -> Case:
    from liger_kernel.ops import rms_norm

    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    y, rstd = torch.empty_like(x), torch.empty(rows, device=dev)
    args = (y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd, rstd.stride(0), cols, 1e-6, 0.0)

    def check():
        r = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
        return max(_rel(rstd, r), _rel(y, (x.float() * r[:, None]).to(torch.bfloat16).float() * w.float())), 2e-2

    return Case(
        f"rms_norm_fwd {rows}x{cols}", rms_norm._rms_norm_forward_kernel, args,
        [C({}, num_warps=w) for w in (4, 8, 16)], (rows,), {"key": ["n_cols"]}, ["Y_ptr", "RSTD_ptr"], check,
        constexprs={"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": triton.next_power_of_2(cols)},
    )


def geglu_fwd(dev: str = "cuda", rows: int = 8192, cols: int = 11008) -> Case:
    from liger_kernel.ops import geglu

    a, b = (torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty_like(a)

    def check():
        g = torch.nn.functional.gelu(a.float(), approximate="tanh").to(torch.bfloat16).float()
        return _rel(c, g * b.float()), 2e-2

    return Case(
        f"geglu_fwd {rows}x{cols}", geglu._geglu_tanh_forward_kernel, (a, b, c, c.stride(-2)),
        [C({}, num_warps=w) for w in (8, 16, 32)], (rows,), {"key": []}, ["c"], check,
        constexprs={"n_cols": cols, "BLOCK_SIZE": triton.next_power_of_2(cols)},
    )


def _at(make, **shape):
    """A case builder at one shape (its name says the shape)."""

    def build(dev: str = "cuda") -> Case:
        return make(dev, **shape)

    build.__name__ = make.__name__ + "_" + "x".join(str(v) for v in shape.values())
    return build


CASES = (
    dyt_fwd,
    dyt_bwd,
    rms_norm_fwd,
    rms_norm_bwd,
    _at(rms_norm_bwd, rows=1024, cols=4096),
    layer_norm_bwd,
    _at(layer_norm_bwd, rows=1024, cols=4096),
    cross_entropy,
    _at(cross_entropy, rows=256, vocab=128256),
    kl_div,
    geglu_fwd,
    swiglu_mlp,
)
