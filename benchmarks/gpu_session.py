"""The load-batching, stall-cut, A/A and fault-isolation study's command line, kept:
`python -m benchmarks.gpu_session ...` is `python -m benchmarks.studies batch_aa ...` (the
study: benchmarks/studies/batch_aa.py)."""

from __future__ import annotations

from benchmarks.studies.batch_aa import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
