"""How far from the GPU's own limits are the kernels the one line leaves at 1.00x?

    python3 benchmarks/results/2026-12-04_triton_headroom/headroom.py OUT

For each kernel-shape (Liger-Kernel's and Triton's tutorials' cases, read from their study
folders with LIGER_SRC / TUTORIALS_SRC; the user families of benchmarks.triton_user): the plain
autotuner's pick (Triton's do_bench, as the one-line studies ran it), then its time per launch
from a CUDA graph of launches (triton.testing.do_bench_cudagraph: no host time inside), and

- bandwidth-bound kernels: the bytes it must read and write at least (every tensor it reads
  once, every tensor it writes once, a tensor it reads and writes both ways) against the time
  torch's own streaming kernels take for as many bytes, timed the same way: a sum over R bytes
  reads them; a copy of W bytes reads and writes them, so writing W bytes costs the copy less
  the sum over W (limit = sum(R) + copy(W) - sum(W));
- GEMMs and attention: its FLOP rate against torch's (cuBLAS matmul, SDPA flash attention) at
  the same shape and dtype, timed the same way.

A kernel at 90% of the copy or of cuBLAS cannot be made 1.10x faster by any order of its
instructions. Rows go to OUT/rows.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.getcwd())

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.dirname(HERE)


def _bench(fn) -> float:
    """Microseconds per call, from a CUDA graph of calls (median)."""
    import triton

    return 1e3 * triton.testing.do_bench_cudagraph(fn, rep=60, return_mode="median")


def _sum_us(nbytes: int) -> float:
    """torch's sum over nbytes of fp32 (reads them once)."""
    import torch

    if nbytes < 4:
        return 0.0
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).normal_()
    return _bench(lambda: src.sum())


def _copy_us(nbytes: int) -> float:
    """torch's copy of nbytes of fp32 (reads and writes them once)."""
    import torch

    if nbytes < 4:
        return 0.0
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).normal_()
    dst = torch.empty_like(src)
    return _bench(lambda: dst.copy_(src))


def _stream_limit(read: int, written: int) -> dict:
    """The streaming limit for `read` bytes in and `written` bytes out (module docstring)."""
    r, cw, rw = _sum_us(read), _copy_us(written), _sum_us(written)
    return {"read_bytes": read, "written_bytes": written, "sum_us": round(r, 2), "copy_us": round(cw, 2),
            "limit_us": round(r + max(cw - rw, 0.0), 2)}


def _split(c) -> tuple[int, int]:
    """(bytes read, bytes written) by a library case's kernel at least: its outputs are written,
    its restore_value tensors read and written, every other tensor read (each storage once)."""
    import torch

    seen, read, written = set(), 0, 0
    outs, both = set(c.outputs), set(c.extras.get("restore_value", ()))
    for name, a in zip(c.kernel.arg_names, c.args):
        if isinstance(a, torch.Tensor) and a.data_ptr() not in seen:
            seen.add(a.data_ptr())
            n = a.numel() * a.element_size()
            read += n if name not in outs or name in both else 0
            written += n if name in outs or name in both else 0
    return read, written


def _bandwidth_row(us: float, read: int, written: int) -> dict:
    limit = _stream_limit(read, written)
    return {**limit, "gbps": round((read + written) / us / 1e3, 1), "of_limit": round(limit["limit_us"] / us, 3),
            "limit": "stream"}


def _row_of_case(c, reference=None, flops=0) -> dict:
    import torch
    import triton

    from benchmarks.one_line_study import _pre_hook
    from benchmarks.triton_one_line import do_bench

    tuner = triton.autotune(c.configs, do_bench=do_bench, **c.extras)(c.kernel)
    c.reset()
    tuner[c.grid](*c.args, **c.constexprs)
    torch.cuda.synchronize()
    cfg = tuner.best_config
    _pre_hook(c, cfg)
    us = _bench(lambda: tuner[c.grid](*c.args, **c.constexprs))
    row = {"case": c.name, "pick": str(cfg), "us": round(us, 2)}
    if reference is None:
        row.update(_bandwidth_row(us, *_split(c)))
    else:
        ref = _bench(reference)
        row.update(tflops=round(flops / us / 1e6, 1), ref_us=round(ref, 2), ref_tflops=round(flops / ref / 1e6, 1),
                   of_limit=round(ref / us, 3), limit="torch")
    return row


def library_rows() -> list:
    """Liger-Kernel's and Triton's tutorials' cases the one line left at about 1.00x."""
    import torch

    from benchmarks.one_line_study import load_cases

    out = []
    liger = load_cases(os.path.join(RESULTS, "2026-12-03_triton_liger", "cases.py"))
    for make in (liger.dyt_fwd, liger.rms_norm_fwd, liger.kl_div, liger.geglu_fwd):
        out.append((make, None, 0))

    def swiglu_ref():
        S, dim, hidden = 2048, 2048, 5632
        x = torch.randn(S, dim, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(2 * hidden, dim, device="cuda", dtype=torch.bfloat16)
        return (lambda: x @ w.T), 2 * S * dim * 2 * hidden

    out.append((liger.swiglu_mlp, swiglu_ref, None))
    sys.modules.pop("cases", None)
    tut = load_cases(os.path.join(RESULTS, "2026-12-03_triton_tutorials", "cases.py"))

    def mm_ref():
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        return (lambda: a @ b), 2 * 4096**3

    def attn_ref():
        q, k, v = (torch.randn(4, 16, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
        f = torch.nn.functional.scaled_dot_product_attention
        return (lambda: f(q, k, v, is_causal=True)), 4 * 4 * 16 * 1024 * 1024 * 128 // 2

    for make in (tut.softmax, tut.layer_norm_fwd):
        out.append((make, None, 0))
    for make in (tut.matmul, tut.persistent_matmul, tut.tma_persistent_matmul):
        out.append((make, mm_ref, None))
    out.append((tut.attention_fwd, attn_ref, None))
    return out


def _user_split(case) -> tuple[int, int]:
    """(bytes read, bytes written) of a user family's case, from its tensors' roles."""
    from reorder.suite.triton_kernels import TensorArg

    size = {"float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "int64": 8}
    read = written = 0
    for a in case.args:
        if isinstance(a, TensorArg):
            n = size[a.dtype]
            for d in a.shape:
                n *= d
            read += n if a.role in ("in", "inout") else 0
            written += n if a.role in ("out", "inout") else 0
    return read, written


def user_rows() -> list[dict]:
    """The user families' 1.00x cells: plain pick against the copy or cuBLAS."""
    import torch
    import triton

    from benchmarks.triton_one_line import configs_of, do_bench, family, key_of
    from reorder.suite.triton_kernels import torch_args

    wanted = {"xent_fp16": ((2048, 32000), (1024, 50257)), "cumsum_fp16": ((4096, 4096), (1024, 4096), (1000, 3000)),
              "linear_gelu_fp16": ((512, 4096, 1024), (2048, 2048, 2048), (128, 4096, 4096)),
              "down_proj_fp16": ((256, 1024, 2720),)}
    rows = []
    for name, shapes in wanted.items():
        fam = family(name)
        for shape in shapes:
            t0 = time.monotonic()
            try:
                case = fam.make(fam.dtype, shape)
                args, _ = torch_args(case)
                tuner = triton.autotune(configs_of(fam), key=key_of(case), do_bench=do_bench)(case.kernel)
                tuner[case.grid](*args, **case.constexprs)
                torch.cuda.synchronize()
                us = _bench(lambda: tuner[case.grid](*args, **case.constexprs))
                row = {"case": f"{name} {'x'.join(map(str, shape))}", "pick": str(tuner.best_config), "us": round(us, 2)}
                if case.flops:
                    m, n, k = shape
                    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
                    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
                    ref = _bench(lambda: a @ b)
                    row.update(tflops=round(case.flops / us / 1e6, 1), ref_us=round(ref, 2),
                               ref_tflops=round(case.flops / ref / 1e6, 1), of_limit=round(ref / us, 3), limit="torch")
                else:
                    row.update(_bandwidth_row(us, *_user_split(case)))
            except Exception as e:  # noqa: BLE001 - a case that fails is a row
                row = {"case": f"{name} {shape}", "error": f"{type(e).__name__}: {e}"}
            row["s"] = round(time.monotonic() - t0, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    rows = []

    def save():
        with open(os.path.join(out_dir, "rows.json"), "w") as fh:
            json.dump(rows, fh, indent=1)

    for make, ref, _ in library_rows():
        t0 = time.monotonic()
        try:
            c = make("cuda")
            if ref is None:
                row = _row_of_case(c)
            else:
                fn, flops = ref()
                row = _row_of_case(c, fn, flops)
        except Exception as e:  # noqa: BLE001 - a case that fails is a row
            row = {"case": make.__name__, "error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc(limit=5)}
        row["s"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "tb"}), flush=True)
        save()
    rows.extend(user_rows())
    save()


if __name__ == "__main__":
    main(sys.argv[1])
