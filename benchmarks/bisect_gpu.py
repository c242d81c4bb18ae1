"""The stall-cut bisection's command line, kept: `python -m benchmarks.bisect_gpu ...` runs
benchmarks/studies/bisect.py (which the stall-cut study also calls on a wrong cut)."""

from __future__ import annotations

import sys

from benchmarks.studies.bisect import main

if __name__ == "__main__":
    sys.exit(main())
