"""`python -m benchmarks.studies NAME [options]`: one study through the shared runner."""

from __future__ import annotations

import sys

from benchmarks.studies import STUDIES, study
from benchmarks.studies.runner import main as run_study


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in STUDIES:
        given = argv[0] if argv else "(none)"
        print(f"benchmarks.studies: unknown study {given!r}; one of: {', '.join(sorted(STUDIES))}", file=sys.stderr)
        return 2
    return run_study(study(argv[0]), argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
