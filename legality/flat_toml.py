"""A fast reader for the flat TOML the latency tables are written in, or None.

legality.calibrate writes the ptxas-observed tables (about a megabyte each) as comments,
`[[entry]]` / `[[pair]]` headers and `key = "string"` / `key = integer` lines. tomllib reads
one in 0.12 CPU-seconds, which every process that verifies pays once (the Triton hook's first
compile in a process among them: about Triton's own compile of a small kernel). This reader
matches every line with one regular expression instead (0.02 CPU-s), and gives up (None) on any line
outside that grammar, so the caller falls back to tomllib: for the lines it accepts it
returns exactly tomllib's document (tests/test_flat_toml.py compares the two on every
table file, and on each construct it refuses).
"""

from __future__ import annotations

import re

# One line each: a header, a string value, an integer value, a comment or blank, or anything
# else (which sends the document to tomllib). Only the layout the generator writes.
_LINE = re.compile(
    r"^(?:\[\[([A-Za-z0-9_-]+)\]\]"
    r'|([A-Za-z0-9_-]+) = "([^"\\\x00-\x08\x0a-\x1f\x7f]*)"'
    r"|([A-Za-z0-9_-]+) = (-?(?:0|[1-9][0-9]*))"
    r"|(#[^\x00-\x08\x0a-\x1f\x7f]*|)"
    r"|([^\n]*))$",
    re.MULTILINE,
)


def loads(text: str) -> dict | None:
    """tomllib.loads(text) for a document of array-of-tables headers and one-line string and
    integer values written `key = value`; None for anything else (the caller parses it with
    tomllib)."""
    doc: dict = {}
    table: dict = doc
    for header, skey, svalue, ikey, ivalue, _blank, other in _LINE.findall(text):
        if other:
            return None
        if header:
            held = doc.setdefault(header, [])
            if not isinstance(held, list) or (held and not isinstance(held[0], dict)):
                return None
            table = {}
            held.append(table)
        elif skey or ikey:
            key = skey or ikey
            if key in table:
                return None
            table[key] = svalue if skey else int(ivalue)
    return doc
