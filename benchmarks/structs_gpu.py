"""The struct-kernel study's command line, kept: `python -m benchmarks.structs_gpu ...` is
`python -m benchmarks.studies structs ...` (the study: benchmarks/studies/structs.py)."""

from __future__ import annotations

from benchmarks.studies.structs import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
