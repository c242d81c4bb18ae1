"""The latency probe's command line, kept: `python -m benchmarks.latency_probe_gpu --prebuild DIR`,
`--run DIR --out OUTDIR` and `--out OUTDIR` (the study: benchmarks/studies/latency_probe.py)."""

from __future__ import annotations

from benchmarks.studies.latency_probe import STUDY, main

__all__ = ["STUDY", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
