"""The struct-kernel build's command line, kept: `python -m benchmarks.structs_build ...` is
`python -m benchmarks.studies structs --prepare ...` (benchmarks/studies/structs_build.py)."""

from __future__ import annotations

from benchmarks.studies.structs_build import main

if __name__ == "__main__":
    raise SystemExit(main())
