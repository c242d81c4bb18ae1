"""On the CPU host (no GPU): The confirmation study's cases: configs and their twins compiled for sm_90 through the one
line's hook on CPU tensors, then rt.verify's static half (benchmarks.one_line_study.cpu_check):

    CONFIGS=1 python3 benchmarks/results/2026-12-04_triton_confirm/cpu_check.py [case,case]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the tree's root

from benchmarks.one_line_study import cpu_check  # noqa: E402

if __name__ == "__main__":
    cpu_check(os.path.join(HERE, "cases.py"), sys.argv[1:])
