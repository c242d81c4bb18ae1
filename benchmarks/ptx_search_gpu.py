"""The two-level search study's command line, kept: `python -m benchmarks.ptx_search_gpu ...`
is `python -m benchmarks.studies ptx_search ...` (the study: benchmarks/studies/ptx_search.py)."""

from __future__ import annotations

from benchmarks.studies.ptx_search import SCREEN_JOB, STUDY, Live, best, screen_job  # noqa: F401 - its old names

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
