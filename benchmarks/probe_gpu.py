"""The probe-timeline study's command line, kept: `python -m benchmarks.probe_gpu --prebuild DIR`,
`--run DIR --out OUT` and `--run DIR --reanalyse OUT` (the study: benchmarks/studies/probe.py)."""

from __future__ import annotations

from benchmarks.studies.probe import STUDY, main

__all__ = ["STUDY", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
