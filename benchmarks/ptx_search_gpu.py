"""The two-level search study's command line, kept: `python -m benchmarks.ptx_search_gpu ...`
is `python -m benchmarks.studies ptx_search ...` (the study: benchmarks/studies/ptx_search.py)."""

from __future__ import annotations

from benchmarks.studies.ptx_search import (  # noqa: F401 - the names this command has always had
    SCREEN_JOB,
    STUDY,
    Dry,
    Live,
    Run,
    best,
    priority,
    screen_job,
    summary,
)

main = STUDY.run

if __name__ == "__main__":
    raise SystemExit(main())
