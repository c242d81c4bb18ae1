"""The confirmation study's cases through the one line on the GPU (benchmarks.one_line_study.gpu_run), from the tree's root:

    python3 benchmarks/results/2026-12-04_triton_confirm/gpu_run.py OUT [case,case]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the tree's root

from benchmarks.one_line_study import gpu_run  # noqa: E402

if __name__ == "__main__":
    gpu_run(os.path.join(HERE, "cases.py"), sys.argv[1:])
