"""The PTX candidates' GPU study, command line kept: `python -m benchmarks.ptx_candidates_gpu ...`
is `python -m benchmarks.studies ptx_candidates ...` (the study: benchmarks/studies/ptx_candidates.py)."""

from __future__ import annotations

from benchmarks.studies.ptx_candidates import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
