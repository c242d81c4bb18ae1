"""The kinds study's cases (kernels.py), each under an autotuner over a few configs, in the
shape of benchmarks.one_line_study.Case."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels as k  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

from benchmarks.one_line_study import Case  # noqa: E402
from benchmarks.one_line_study import rel_error as _rel  # noqa: E402

C = triton.Config


def _exact(got, want) -> tuple[float, float]:
    return float((got.long() != want.long()).sum()), 0.0


def fp8_gemm(dev: str = "cuda", M: int = 2048, N: int = 2048, K: int = 2048) -> Case:
    a = (torch.randn(M, K, device=dev) / 2).to(torch.float8_e4m3fn)
    bt = (torch.randn(N, K, device=dev) / 2).to(torch.float8_e4m3fn)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    scale = 1.0 / 16

    def check():
        return _rel(c, (a.float() @ bt.float().T) * scale), 2e-2

    tile = {"BM": 128, "BN": 128, "BK": 64}
    return Case(
        f"fp8_gemm {M}x{N}x{K}", k.fp8_gemm, (a, bt, c, scale, M, N, K, a.stride(0), bt.stride(0), c.stride(0)),
        [C(tile, num_warps=w, num_stages=s) for w, s in ((4, 3), (8, 3), (8, 4))],
        lambda m: (M // m["BM"], N // m["BN"]), {"key": ["M", "N", "K"]}, ["c_ptr"], check,
    )


def int8_gemm(dev: str = "cuda", M: int = 2048, N: int = 2048, K: int = 1024) -> Case:
    a = torch.randint(-127, 128, (M, K), device=dev, dtype=torch.int8)
    b = torch.randint(-127, 128, (K, N), device=dev, dtype=torch.int8)
    c = torch.empty(M, N, device=dev, dtype=torch.int32)

    def check():
        return _exact(c, (a.double() @ b.double()).round())

    tile = {"BM": 128, "BN": 128, "BK": 64}
    return Case(
        f"int8_gemm {M}x{N}x{K}", k.int8_gemm, (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0)),
        [C(tile, num_warps=w, num_stages=s) for w, s in ((4, 3), (8, 3), (8, 4))],
        lambda m: (M // m["BM"], N // m["BN"]), {"key": ["M", "N", "K"]}, ["c_ptr"], check,
    )


def split_k_gemm(dev: str = "cuda", M: int = 512, N: int = 512, K: int = 8192) -> Case:
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16) / 64
    c = torch.zeros(M, N, device=dev, dtype=torch.float32)

    def check():
        return _rel(c, a.float() @ b.float()), 1e-2

    return Case(
        f"split_k_gemm {M}x{N}x{K}", k.split_k_gemm, (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0)),
        [C({"BM": 64, "BN": 64, "BK": 64, "SPLIT": s}, num_warps=4, num_stages=3) for s in (4, 8)],
        lambda m: (M // m["BM"], N // m["BN"], m["SPLIT"]), {"key": ["M", "N", "K"], "reset_to_zero": ["c_ptr"]},
        ["c_ptr"], check, reset=c.zero_,
    )


def cluster_gemm(dev: str = "cuda", M: int = 2048, N: int = 2048, K: int = 2048) -> Case:
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16) / 32
    c = torch.empty(M, N, device=dev, dtype=torch.float16)

    def check():
        return _rel(c, torch.relu(a.float() @ b.float())), 2e-2

    tile = {"BM": 128, "BN": 128, "BK": 64}
    return Case(
        f"cluster_gemm {M}x{N}x{K}", k.cluster_gemm, (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0)),
        [C(tile, num_warps=4, num_stages=3, num_ctas=n) for n in (1, 2)],
        lambda m: (M // m["BM"], N // m["BN"]), {"key": ["M", "N", "K"]}, ["c_ptr"], check,
    )


def tma_row_sum(dev: str = "cuda", M: int = 4096, N: int = 8192) -> Case:
    if dev == "cuda":
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    x = torch.randn(M, N, device=dev, dtype=torch.float16)
    out = torch.empty(M, device=dev, dtype=torch.float32)

    def check():
        return _rel(out, x.float().sum(1)), 1e-3

    return Case(
        f"tma_row_sum {M}x{N}", k.tma_row_sum, (x, out, M, N),
        [C({"BM": bm, "BN": 128}, num_warps=4, num_stages=s) for bm, s in ((32, 2), (32, 4), (64, 3))],
        lambda m: (triton.cdiv(M, m["BM"]),), {"key": ["M", "N"]}, ["out_ptr"], check,
    )


def asm_mix(dev: str = "cuda", n: int = 1 << 24) -> Case:
    x = torch.randint(-(2**31), 2**31 - 1, (n,), device=dev, dtype=torch.int32)
    y = torch.empty_like(x)

    def check():
        return _exact(y, x ^ (x >> 3) ^ (x << 5))

    return Case(
        f"asm_mix {n}", k.asm_mix, (x, y, n), [C({"BLOCK": b}, num_warps=4) for b in (1024, 2048)], (132 * 4,),
        {"key": ["n"]}, ["y_ptr"], check,
    )


def sort_rows(dev: str = "cuda", rows: int = 4096, N: int = 1024) -> Case:
    x = torch.randn(rows, N, device=dev)
    y = torch.empty_like(x)

    def check():
        return _rel(y, torch.sort(x, dim=1, descending=True).values), 0.0

    return Case(
        f"sort_rows {rows}x{N}", k.sort_rows, (x, y), [C({}, num_warps=w) for w in (4, 8)], (rows,),
        {"key": []}, ["y_ptr"], check, constexprs={"N": N},
    )


def recurrence(dev: str = "cuda", rows: int = 1024, T: int = 4096) -> Case:
    a = torch.rand(rows, T, device=dev) * 0.5 + 0.5
    b = torch.randn(rows, T, device=dev)
    h = torch.empty_like(a)

    def check():
        want = torch.empty(rows, T, device=dev, dtype=torch.float64)
        carry = torch.zeros(rows, device=dev, dtype=torch.float64)
        for t in range(T):
            carry = a[:, t].double() * carry + b[:, t].double()
            want[:, t] = carry
        return _rel(h, want.float()), 1e-4

    return Case(
        f"recurrence {rows}x{T}", k.recurrence, (a, b, h, T),
        [C({"BLOCK": blk}, num_warps=4) for blk in (256, 1024)] + [C({"BLOCK": 512}, num_warps=8)], (rows,),
        {"key": ["T"]}, ["h_ptr"], check,
    )


def search_sorted(dev: str = "cuda", n_s: int = 1 << 20, n_q: int = 1 << 22) -> Case:
    s = torch.sort(torch.randn(n_s, device=dev)).values
    q = torch.randn(n_q, device=dev)
    out = torch.empty(n_q, device=dev, dtype=torch.int32)

    def check():
        return _exact(out, torch.searchsorted(s, q))

    return Case(
        f"search_sorted {n_s} / {n_q}", k.search_sorted, (s, q, out, n_s, n_q),
        [C({"BLOCK": blk}, num_warps=4) for blk in (256, 1024)], lambda m: (triton.cdiv(n_q, m["BLOCK"]),),
        {"key": ["n_s", "n_q"]}, ["out_ptr"], check,
    )


def complex_mul(dev: str = "cuda", n: int = 1 << 23) -> Case:
    x = torch.randn(n, 2, device=dev)
    w = torch.randn(n, 2, device=dev)
    y = torch.empty_like(x)

    def check():
        want = torch.view_as_real(torch.view_as_complex(x) * torch.view_as_complex(w))
        return _rel(y, want), 1e-5

    return Case(
        f"complex_mul {n}", k.complex_mul, (x, w, y, n), [C({"BLOCK": blk}, num_warps=4) for blk in (512, 1024)],
        lambda m: (triton.cdiv(n, m["BLOCK"]),), {"key": ["n"]}, ["y_ptr"], check,
    )


def kahan_row_sum(dev: str = "cuda", rows: int = 2048, N: int = 16384) -> Case:
    x = torch.randn(rows, N, device=dev, dtype=torch.float64)
    out = torch.empty(rows, device=dev, dtype=torch.float64)

    def check():
        want = x.sum(1)
        return float((out - want).abs().max() / want.abs().max()), 1e-12

    return Case(
        f"kahan_row_sum {rows}x{N}", k.kahan_row_sum, (x, out, N),
        [C({"BLOCK": blk}, num_warps=w) for blk, w in ((256, 2), (512, 4), (1024, 4))], (rows,),
        {"key": ["N"]}, ["out_ptr"], check,
    )


CASES = (
    fp8_gemm, int8_gemm, split_k_gemm, cluster_gemm, tma_row_sum, asm_mix, sort_rows, recurrence, search_sorted,
    complex_mul, kahan_row_sum,
)
