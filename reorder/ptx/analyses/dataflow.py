"""Def-use over virtual registers: reaching definitions and liveness, per statement.

PTX is not in SSA form (nvcc reuses a register across a loop's iterations, and a peeled
copy reuses the loop's names), so a use can have several reaching definitions and a move
must ask which. A guarded definition may not happen: it reaches on, but kills nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import cached_property

from reorder.ptx.analyses.cfg import EXIT, Cfg
from reorder.ptx.model.effects import Effect

Defs = dict[str, frozenset[int]]


class DefUse:
    """Reaching definitions and liveness of one function (computed once, read-only afterwards)."""

    def __init__(self, cfg: Cfg, effects: tuple[Effect | None, ...]) -> None:
        self.cfg = cfg
        self.effects = effects
        self.body = cfg.function.body

    def _kills(self, i: int) -> bool:
        return self.body[i].ins.guard is None

    @cached_property
    def _reaching_in(self) -> dict[int, Defs]:
        """Definitions reaching each block's entry: a forward may-analysis, iterated in
        reverse postorder until nothing changes."""
        cfg = self.cfg
        order = cfg.reverse_postorder
        entry: dict[int, Defs] = {b: {} for b in order}
        exit_: dict[int, Defs] = {}
        changed = True
        while changed:
            changed = False
            for b in order:
                merged: dict[str, frozenset[int]] = {}
                for p in cfg.graph.predecessors(b):
                    for reg, defs in exit_.get(p, {}).items():
                        have = merged.get(reg)
                        merged[reg] = defs if have is None else have | defs
                entry[b] = merged
                out = self._through_block(b, dict(merged))
                if out != exit_.get(b):
                    exit_[b] = out
                    changed = True
        return entry

    def _through_block(self, b: int, defs: Defs, stop: int | None = None) -> Defs:
        for i in self.cfg.blocks[b].instructions:
            if i == stop:
                break
            effect = self.effects[i]
            for reg in effect.defs:
                defs[reg] = frozenset({i}) if self._kills(i) else defs.get(reg, frozenset()) | {i}
        return defs

    def reaching_in(self, b: int) -> Defs:
        """Definitions reaching the entry of block b."""
        return self._reaching_in[b]

    def reaching(self, i: int, reg: str) -> frozenset[int]:
        """The definitions of `reg` that reach statement i (before it executes): the block's
        writers of `reg` before i, back to one that kills, else from the block's entry (a
        walk over one register's writers, not the block: a twin search asks this for pairs
        of loads, and walking the block made it cubic in the kernel's length)."""
        b = self.cfg.block_of[i]
        positions, writers = self._block_writers[b].get(reg, ((), ()))
        found: list[int] = []
        for k in range(bisect_left(positions, self._position[i]) - 1, -1, -1):
            d = writers[k]
            if self._kills(d):
                return frozenset({d, *found})
            found.append(d)
        entry = self._reaching_in[b].get(reg, frozenset())
        return entry | frozenset(found) if found else entry

    @cached_property
    def _position(self) -> dict[int, int]:
        """Statement -> its place among its block's instructions."""
        return {i: p for block in self.cfg.blocks for p, i in enumerate(block.instructions)}

    @cached_property
    def _block_writers(self) -> dict[int, dict[str, tuple[list[int], list[int]]]]:
        """Block -> register -> (places in the block, statements) of the instructions writing it, in order."""
        out: dict[int, dict[str, tuple[list[int], list[int]]]] = {}
        for block in self.cfg.blocks:
            mine: dict[str, tuple[list[int], list[int]]] = {}
            for p, i in enumerate(block.instructions):
                for reg in self.effects[i].defs if self.effects[i] else ():
                    places, statements = mine.setdefault(reg, ([], []))
                    places.append(p)
                    statements.append(i)
            out[block.index] = mine
        return out

    @cached_property
    def definitions(self) -> dict[str, frozenset[int]]:
        """Every statement defining each register."""
        out: dict[str, set[int]] = {}
        for i, effect in enumerate(self.effects):
            for reg in effect.defs if effect else ():
                out.setdefault(reg, set()).add(i)
        return {reg: frozenset(v) for reg, v in out.items()}

    @cached_property
    def _live_out(self) -> dict[int, frozenset[str]]:
        """Registers live at each block's exit (a backward may-analysis to a fixed point)."""
        cfg = self.cfg
        live_in: dict[int, frozenset[str]] = {b.index: frozenset() for b in cfg.blocks}
        live_out = dict(live_in)
        changed = True
        while changed:
            changed = False
            for block in reversed(cfg.blocks):
                out = frozenset().union(*(live_in[s] for s in cfg.graph.successors(block.index) if s != EXIT))
                new_in = self._live_before(block.index, out, block.start)
                if out != live_out[block.index] or new_in != live_in[block.index]:
                    live_out[block.index], live_in[block.index] = out, new_in
                    changed = True
        return live_out

    def _live_before(self, b: int, live: frozenset[str], i: int) -> frozenset[str]:
        current = set(live)
        for k in reversed(self.cfg.blocks[b].instructions):
            if k < i:
                break
            effect = self.effects[k]
            if self._kills(k):
                current -= effect.defs
            current |= effect.uses
        return frozenset(current)

    def live_before(self, i: int) -> frozenset[str]:
        """Registers live just before statement i: read on some path from there before being written."""
        b = self.cfg.block_of[i]
        return self._live_before(b, self._live_out[b], i)
