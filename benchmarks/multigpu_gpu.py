"""The several-GPU study's command line, kept: `python -m benchmarks.multigpu_gpu ...` is
`python -m benchmarks.studies multigpu ...` (the study: benchmarks/studies/multigpu.py)."""

from __future__ import annotations

from benchmarks.studies.multigpu import STUDY

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
