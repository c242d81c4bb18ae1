"""The one-search-for-every-shape study's command line, kept: `python -m benchmarks.shapes_gpu ...`
is `python -m benchmarks.studies shapes ...` (the study: benchmarks/studies/shapes.py)."""

from __future__ import annotations

from benchmarks.studies.shapes import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
