"""The stall-cut study's command line, kept: `python -m benchmarks.stallcut_gpu ...` is
`python -m benchmarks.studies stallcut ...` (the study: benchmarks/studies/stallcut.py)."""

from __future__ import annotations

from benchmarks.studies.stallcut import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
