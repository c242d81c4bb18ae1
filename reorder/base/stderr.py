"""One line on stderr in one write.

`print(line, file=sys.stderr)` writes the text and its newline in two calls; a SIGTERM whose
handler raises between them leaves the line open, and the run's last line ("terminated during
the search") is glued onto a progress line, where a script looking for it at the start of a
line does not find it. One `write` of text and newline cannot be split by a Python-level
signal handler."""

from __future__ import annotations

import sys


def say(line: str) -> None:
    """Write `line` and its newline to stderr in one call, and flush."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
