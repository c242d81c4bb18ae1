"""The single-move study's command line, kept: `python -m benchmarks.moves_gpu ...` is
`python -m benchmarks.studies moves ...` (the study: benchmarks/studies/moves.py)."""

from __future__ import annotations

from benchmarks.studies.moves import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
