"""One CSV for a benchmark's result rows, whatever fields each row carries."""

from __future__ import annotations

import csv
from pathlib import Path


def write_rows(path: Path, rows: list[dict]) -> None:
    """Rows to `path`; the header is every field in the order rows first bring it (a
    crashed job's row has fewer fields than a timed one, and both belong in the file)."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def error_line(exc: BaseException) -> str:
    """'Type: first line of the message': a failed job's reason in one CSV cell."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
