"""One CSV for a benchmark's result rows, whatever fields each row carries, and its reader."""

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


def read_rows(path: Path) -> list[dict]:
    """The rows `write_rows` wrote to `path` (fields as text), none when there is no file yet (a
    report drawn before the first row came)."""
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def error_line(exc: BaseException) -> str:
    """'Type: first line of the message': a failed job's reason in one CSV cell."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
