"""The cells where the one line picked a slower twin, and some where it won, as
benchmarks.one_line_study cases: the user families' cumsum (three shapes), cross-entropy,
add + LayerNorm and down projection (benchmarks.triton_user), and the kinds study's
recurrence, binary search, inline-PTX loop and Kahan sum."""

from __future__ import annotations

import importlib.util
import os
import sys

from benchmarks.one_line_study import Case

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = os.path.join(os.path.dirname(HERE), "2026-12-04_triton_kinds")
sys.path.insert(0, KINDS)
_spec = importlib.util.spec_from_file_location("kinds_cases", os.path.join(KINDS, "cases.py"))
kinds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kinds)


def _user(name: str, shape: tuple[int, ...]):
    def make(dev: str = "cuda") -> Case:
        import torch

        from benchmarks.triton_one_line import configs_of, family, key_of
        from reorder.suite.triton_kernels import torch_args

        fam = family(name)
        case = fam.make(fam.dtype, shape)
        args, named = torch_args(case, device=dev)

        def check():
            want = case.reference(named)
            worst = max(float(((named[k].float() - w.float()).abs() / (1 + w.float().abs())).max()) for k, w in want.items())
            return worst, fam.tol

        del torch
        return Case(
            f"{name} {'x'.join(map(str, shape))}", case.kernel, args, configs_of(fam), case.grid,
            {"key": key_of(case)}, list(case.outputs), check, constexprs=dict(case.constexprs),
        )

    make.__name__ = f"{name}_{'x'.join(map(str, shape))}"
    return make


CASES = (
    _user("cumsum_fp16", (1024, 4096)),
    _user("cumsum_fp16", (4096, 4096)),
    _user("cumsum_fp16", (1000, 3000)),
    _user("xent_fp16", (512, 32000)),
    _user("addnorm_fp16", (2048, 8192)),
    _user("down_proj_fp16", (512, 1024, 4096)),
    kinds.recurrence,
    kinds.search_sorted,
    kinds.asm_mix,
    kinds.kahan_row_sum,
)
