"""Issue rates: how soon the next op may follow on the same pipe.

A latency table says when a result is ready; this says when a pipe is free again. sm_90's
integer ALU and IMAD take 2 cycles per warp instruction, IMAD.WIDE 4, and ptxas never issues
the next op of the pipe sooner (legality.calibration.issue, from every cubin the repository
holds). A stall cut below that floor was wrong on an H200 (mulhi_accumulate, 2026-11-30), so
the verifier requires it: an op issued while its pipe is still busy with the previous one is a
violation of kind `issue`. Ops without a floor above 1 in the tables have no rule.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from legality.latency import CS2R_CLASS, FMAI, FXU, IMAD, P2R_CLASS, opcode_class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLE_DIR = Path(__file__).parent / "tables"
RESOURCE_PREFIX = "PIPE:"
_SHARED = {
    FMAI: "FMA",
    IMAD: "FMA",
    CS2R_CLASS: FXU,
    P2R_CLASS: FXU,
}  # FFMA and IMAD issue to one pipe (IMAD -> FFMA: 2 on sm_90)


def pipe_of(opcode: str) -> str | None:
    """The pipe an opcode issues to, or None for ops this rule does not cover."""
    cls = opcode_class(opcode)
    if cls in ("MIO", "BRU", "UNKNOWN"):
        return None
    return _SHARED.get(cls, cls)


def op_key(opcode: str) -> str:
    """The key an op's rate is kept under: its base, with `.WIDE` apart (two passes)."""
    base = opcode.split(".")[0]
    return f"{base}.WIDE" if ".WIDE" in opcode else base


@dataclass(frozen=True)
class IssueRates:
    """Per (pipe, op key), the cycles the op keeps its pipe busy (ops without an entry: 1, no
    rule: a pipe-wide floor held for adjacent pairs but not for every op of the pipe further
    apart, e.g. sm_80's HFMA2.MMA two cycles after another)."""

    ops: dict[tuple[str, str], int]

    def busy_for(self, opcode: str) -> int:
        """Cycles from this op's issue until the next op of its pipe may issue (1: no rule)."""
        pipe = pipe_of(opcode)
        if pipe is None:
            return 1
        return self.ops.get((pipe, op_key(opcode)), 1)


@lru_cache(maxsize=8)
def load_rates(arch: int) -> IssueRates:
    """The arch's issue rates (an arch without a table: none, every op at 1)."""
    path = TABLE_DIR / f"issue_sm_{arch}.toml"
    if not path.is_file():
        return IssueRates({})
    raw = tomllib.loads(path.read_text())
    return IssueRates({(e["pipe"], e["op"]): int(e["cycles"]) for e in raw.get("op", [])})
