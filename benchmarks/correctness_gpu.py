"""The race-check study's command line, kept: `python -m benchmarks.correctness_gpu PART DIR ...`
is `python -m benchmarks.studies correctness ...` (the study: benchmarks/studies/correctness.py)."""

from __future__ import annotations

from benchmarks.studies.correctness import STUDY, main

__all__ = ["STUDY", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
