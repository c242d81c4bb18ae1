"""The StallCut config file: which functions and offset ranges to process.

    # comment
    .text.Kernel                # the whole function
    .text.Kernel c0-d40 1f0-200 # hex [start, end) ranges in it
    -war 0-8                    # after a section line: regions excluded from WAR checks
    -waw 3c-48                  # ... and from WAW checks

reorder keeps every WAR/WAW check regardless (excluding them could only under-stall); the
`-war`/`-waw` lines are parsed, kept and reported so configs written for other tools load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reorder.base.errors import InputError
from reorder.binary.cubin import Cubin


@dataclass(frozen=True)
class StallConfig:
    sections: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    excluded: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def kernels(self) -> list[str]:
        return list(self.sections)

    def ranges(self, kernel: str) -> list[tuple[int, int]] | None:
        spans = self.sections.get(kernel)
        return list(spans) if spans else None


def _span(text: str, where: str) -> tuple[int, int]:
    try:
        lo, hi = text.split("-")
        return int(lo, 16), int(hi, 16)
    except ValueError:
        raise InputError(f"{where}: bad range {text!r} (want hex START-END)") from None


def read_config(path: str) -> StallConfig:
    """The config file at `path`; unreadable or non-text files are one InputError."""
    from reorder.base.files import read_text_input

    return parse_config(read_text_input(path, what="text config"), path)


def parse_config(text: str, where: str = "config") -> StallConfig:
    sections: dict[str, tuple[tuple[int, int], ...]] = {}
    excluded: dict[str, tuple[str, ...]] = {}
    current = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#")[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0].startswith(".text."):
            current = words[0][len(".text.") :]
            sections[current] = tuple(_span(w, f"{where}:{n}") for w in words[1:])
        elif words[0] in ("-war", "-waw"):
            if current is None:
                raise InputError(f"{where}:{n}: {words[0]} before any .text line")
            for w in words[1:]:
                _span(w, f"{where}:{n}")
            excluded[current] = excluded.get(current, ()) + (line,)
        else:
            raise InputError(f"{where}:{n}: expected .text.NAME, -war or -waw, got {words[0]!r}")
    return StallConfig(sections, excluded)


def skeleton(cubin: Cubin) -> str:
    lines = ["# reorder stalls config: one .text line per function, optional hex ranges", ""]
    for k in cubin.kernels:
        lines.append(f".text.{k.name} 0-{len(k.text):x}")
    return "\n".join(lines) + "\n"
