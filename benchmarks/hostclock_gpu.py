"""The host-clock study's command line, kept: `python -m benchmarks.hostclock_gpu ...` is
`python -m benchmarks.studies hostclock ...` with the CPU re-analyses `--analyse` and
`--reanalyse` (the study: benchmarks/studies/hostclock.py)."""

from __future__ import annotations

from benchmarks.studies.hostclock import main

if __name__ == "__main__":
    raise SystemExit(main())
