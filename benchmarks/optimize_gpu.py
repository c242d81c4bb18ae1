"""The search-against-single-moves study's command line, kept: `python -m benchmarks.optimize_gpu ...`
is `python -m benchmarks.studies optimize ...` (the study: benchmarks/studies/optimize.py)."""

from __future__ import annotations

from benchmarks.studies.optimize import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
