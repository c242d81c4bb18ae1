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


class DefUse:
    """Reaching definitions and liveness of one function (computed once, read-only afterwards)."""

    def __init__(self, cfg: Cfg, effects: tuple[Effect | None, ...]) -> None:
        self.cfg = cfg
        self.effects = effects
        self.body = cfg.function.body

    def _kills(self, i: int) -> bool:
        return self.body[i].ins.guard is None

    @cached_property
    def _def_bits(self) -> tuple[dict[tuple[int, str], int], dict[str, int], tuple[tuple[int, str], ...]]:
        """(bit of each (statement, register) definition, every bit of each register, the
        definition of each bit): a statement writing four registers is four definitions, as
        a later write of one of them kills that one only."""
        bit: dict[tuple[int, str], int] = {}
        of_reg: dict[str, int] = {}
        order: list[tuple[int, str]] = []
        for i, effect in enumerate(self.effects):
            for reg in sorted(effect.defs) if effect else ():
                bit[(i, reg)] = len(order)
                of_reg[reg] = of_reg.get(reg, 0) | (1 << len(order))
                order.append((i, reg))
        return bit, of_reg, tuple(order)

    def _gen_kill(self, b: int) -> tuple[int, int]:
        """(definitions of block b that reach its exit, definitions b kills): one walk."""
        bit, of_reg, _ = self._def_bits
        gen = kill = 0
        for i in self.cfg.blocks[b].instructions:
            effect = self.effects[i]
            for reg in effect.defs if effect else ():
                if self._kills(i):
                    gen &= ~of_reg[reg]
                    kill |= of_reg[reg]
                gen |= 1 << bit[(i, reg)]
        return gen, kill

    @cached_property
    def _reaching_bits(self) -> dict[int, int]:
        """Definitions reaching each block's entry, as bits: a forward may-analysis iterated in
        reverse postorder to a fixed point. Bitwise on whole sets: a dictionary of frozensets
        per block took 1.3 s per function on a 5,648-instruction warp select (19 walks of its
        move space re-derived it: 40 of the 69 s its seeding took)."""
        cfg = self.cfg
        order = cfg.reverse_postorder
        flow = {b: self._gen_kill(b) for b in order}
        entry = dict.fromkeys(order, 0)
        exit_: dict[int, int] = {}
        changed = True
        while changed:
            changed = False
            for b in order:
                merged = 0
                for p in cfg.graph.predecessors(b):
                    merged |= exit_.get(p, 0)
                entry[b] = merged
                gen, kill = flow[b]
                out = gen | (merged & ~kill)
                if out != exit_.get(b):
                    exit_[b] = out
                    changed = True
        return entry

    def _decode(self, bits: int) -> frozenset[int]:
        """The statements of a set of definition bits."""
        order = self._def_bits[2]
        found: list[int] = []
        while bits:
            low = bits & -bits
            found.append(order[low.bit_length() - 1][0])
            bits ^= low
        return frozenset(found)

    def entry_defs(self, b: int, reg: str) -> frozenset[int]:
        """The definitions of `reg` reaching the entry of block b."""
        bits = self._reaching_bits.get(b, 0) & self._def_bits[1].get(reg, 0)
        return self._decode(bits) if bits else frozenset()

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
        entry = self.entry_defs(b, reg)
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
