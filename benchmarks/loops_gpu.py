"""The loop-move study's command line, kept: `python -m benchmarks.loops_gpu ...` is
`python -m benchmarks.studies loops ...` (the study: benchmarks/studies/loops.py)."""

from __future__ import annotations

from benchmarks.studies.loops import STUDY, Run, per_point, picked  # noqa: F401 - the names it always had

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
