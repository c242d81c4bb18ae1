"""GPU studies, each a declarative `Study` (benchmarks/studies/runner.py) run by one runner:
`python -m benchmarks.studies NAME [--dry-run] [--out DIR] [--deadline S]`."""

from __future__ import annotations

import importlib

# name -> the module whose STUDY it is (imported only when asked for: a study pulls in its build)
STUDIES = {
    "batch_aa": "benchmarks.studies.batch_aa",
    "correctness": "benchmarks.studies.correctness",
    "hostclock": "benchmarks.studies.hostclock",
    "latency_probe": "benchmarks.studies.latency_probe",
    "loops": "benchmarks.studies.loops",
    "moves": "benchmarks.studies.moves",
    "multigpu": "benchmarks.studies.multigpu",
    "optimize": "benchmarks.studies.optimize",
    "probe": "benchmarks.studies.probe",
    "ptx_candidates": "benchmarks.studies.ptx_candidates",
    "ptx_search": "benchmarks.studies.ptx_search",
    "shapes": "benchmarks.studies.shapes",
    "stallcut": "benchmarks.studies.stallcut",
    "structs": "benchmarks.studies.structs",
}


def study(name: str):
    """The `Study` called `name`; KeyError when there is none."""
    return importlib.import_module(STUDIES[name]).STUDY
