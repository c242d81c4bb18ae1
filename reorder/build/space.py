"""The move space of one kernel, and building the candidate a choice of moves describes.

A `Choice` names which instances of each move family a trial picked (indices into the
`SearchSpace` lists). Building applies them in a fixed order (swaps, then load batching,
then stall cuts), each step written, re-read and verified (`reorder.build.pipeline`), so a
candidate that exists is legal. When PTX is at hand (`SearchSpace.ptx`), a choice may
instead hold PTX picks and a combination of SASS families: built by reorder.build.ptxlevel
(PTX moves, the producer's ptxas, verified, then the SASS families). `build_candidate` is
a module-level function of plain arguments so joblib can run it in worker processes.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from reorder.base.errors import ReorderError
from reorder.base.files import write_atomic
from reorder.binary.cubin import parse_cubin
from reorder.build.pipeline import Outcome, apply_each
from reorder.build.ptxlevel import PtxLevel
from reorder.build.ptxlevel import build as build_ptx
from reorder.moves.barrierhoist import BarrierHoist
from reorder.moves.core import LoadBatch, StallCut, Swap
from reorder.moves.dominatorhoist import DominatorHoist
from reorder.moves.protocol import Move, MoveOptions
from reorder.moves.slicebatch import SliceBatch
from reorder.ptx.space.registry import Pick
from reorder.sass.model import KernelCode, decode_kernel

MAX_SWAPS = 3


@dataclass(frozen=True)
class SearchSpace:
    """Every legal instance of every move family in one kernel."""

    load_batches: tuple[LoadBatch, ...]
    stall_cuts: tuple[StallCut, ...]
    swaps: tuple[Swap, ...]
    slice_batches: tuple[SliceBatch, ...] = ()
    ptx: PtxLevel | None = None  # the PTX at hand, None when there is none
    families: tuple[str, ...] | None = None  # the SASS families listed (None: all); see reorder.build.listing
    barrier_hoists: tuple[BarrierHoist, ...] = ()
    dominator_hoists: tuple[DominatorHoist, ...] = ()

    @property
    def listed(self) -> tuple[str, ...]:
        return FAMILIES if self.families is None else self.families

    def size_line(self) -> str:
        sass = (
            f"{len(self.slice_batches)} slice batches, {len(self.load_batches)} load batches, "
            f"{len(self.stall_cuts)} stall-cut blocks, "
            f"{len(self.swaps)} swaps (up to {MAX_SWAPS} per candidate), "
            f"{len(self.barrier_hoists)} barrier hoists, {len(self.dominator_hoists)} dominator hoists"
        )
        unlisted = [f for f in FAMILIES if f not in self.listed]
        if unlisted:
            sass += f" ({', '.join(f.replace('_', ' ') for f in unlisted)}: not listed in the time given)"
        if self.ptx is None:
            return sass + "; PTX moves unavailable (no PTX: give a .ptx or .cu input, or --ptx with a cubin)"
        return f"{sass}; {self.ptx.size_line()}"


@dataclass(frozen=True)
class Choice:
    """The moves of one candidate, as sorted indices into the space's lists."""

    load_batches: tuple[int, ...] = ()
    stall_cuts: tuple[int, ...] = ()
    swaps: tuple[int, ...] = ()
    slice_batches: tuple[int, ...] = ()
    ptx: tuple[Pick, ...] = ()  # PTX picks (reorder.ptx.space.searchspace); then the SASS indices are unused
    sass: str = ""  # SASS families on the PTX build ('sc', 'sb+sc' ...; reorder.build.ptxlevel), '' for none
    barrier_hoists: tuple[int, ...] = ()
    dominator_hoists: tuple[int, ...] = ()

    def moves(self) -> list[tuple[str, int]]:
        return (
            [("ptx", i) for i in range(len(self.ptx))]
            + [("sass", 0)] * bool(self.sass)
            + [("barrier_hoist", i) for i in self.barrier_hoists]
            + [("slice_batch", i) for i in self.slice_batches]
            + [("load_batch", i) for i in self.load_batches]
            + [("stall_cut", i) for i in self.stall_cuts]
            + [("swap", i) for i in self.swaps]
            + [("dominator_hoist", i) for i in self.dominator_hoists]
        )

    def without(self, family: str, index: int) -> Choice:
        """The same choice with one move left out (to measure that move's contribution)."""
        if family == "ptx":
            return replace(self, ptx=self.ptx[:index] + self.ptx[index + 1 :])
        if family == "sass":
            return replace(self, sass="")
        pick = {
            "load_batch": self.load_batches,
            "stall_cut": self.stall_cuts,
            "swap": self.swaps,
            "slice_batch": self.slice_batches,
            "barrier_hoist": self.barrier_hoists,
            "dominator_hoist": self.dominator_hoists,
        }
        kept = {f: tuple(i for i in v if (f, i) != (family, index)) for f, v in pick.items()}
        return replace(
            self,
            load_batches=kept["load_batch"],
            stall_cuts=kept["stall_cut"],
            swaps=kept["swap"],
            slice_batches=kept["slice_batch"],
            barrier_hoists=kept["barrier_hoist"],
            dominator_hoists=kept["dominator_hoist"],
        )

    def label(self) -> str:
        if self.ptx:
            return f"PTX {' '.join(p.describe() for p in self.ptx)}; then ptxas; then SASS {self.sass or 'none'}"
        return ", ".join(f"{f}#{i}" for f, i in self.moves()) or "(no moves: the original)"


FAMILIES = (
    "stall_cuts",
    "swaps",
    "slice_batches",
    "load_batches",
    "barrier_hoists",
    "dominator_hoists",
)  # SearchSpace's SASS lists
_MOVES: dict[str, Any] = {
    "load_batches": LoadBatch,
    "stall_cuts": StallCut,
    "swaps": Swap,
    "slice_batches": SliceBatch,
    "barrier_hoists": BarrierHoist,
    "dominator_hoists": DominatorHoist,
}


def family_instances(code: KernelCode, noalias: bool, family: str) -> tuple:
    """Every legal instance of one SASS move family (a FAMILIES name) in the kernel."""
    return tuple(_MOVES[family].instances(code, MoveOptions(noalias=noalias)))


def search_space(code: KernelCode, noalias: bool, families: tuple[str, ...] | None = None) -> SearchSpace:
    """The space of `families` (None: all); a family left out has no instances. A build
    lists the same families as the run did (listing is deterministic), so indices agree."""
    listed = FAMILIES if families is None else families
    found = {f: family_instances(code, noalias, f) if f in listed else () for f in FAMILIES}
    return from_lists(found, families)


def from_lists(found: dict[str, tuple], families: tuple[str, ...] | None, ptx: PtxLevel | None = None) -> SearchSpace:
    """A SearchSpace from each family's instances (a missing family: none)."""
    return SearchSpace(
        found.get("load_batches", ()),
        found.get("stall_cuts", ()),
        found.get("swaps", ()),
        found.get("slice_batches", ()),
        ptx=ptx,
        families=families,
        barrier_hoists=found.get("barrier_hoists", ()),
        dominator_hoists=found.get("dominator_hoists", ()),
    )


def apply_choice(code: KernelCode, space: SearchSpace, choice: Choice, noalias: bool = False) -> Outcome:
    """Build a candidate: barrier hoists, slice batches, load batches, then swaps, then stall
    cuts, then dominator hoists (the instances were listed on the original kernel; one an
    earlier step made moot is skipped as a no-op; the in-block moves name blocks and
    instructions by index, which a dominator hoist shifts, so it comes last and names its block
    by ordinal). Raises ReorderError when any chosen move is rejected by the verifier or the
    encoder."""
    steps: list[Move] = [space.barrier_hoists[i] for i in choice.barrier_hoists]
    steps += [space.slice_batches[i] for i in choice.slice_batches]
    steps += [space.load_batches[i] for i in choice.load_batches]
    steps += _independent_swaps([space.swaps[i] for i in choice.swaps])
    if choice.stall_cuts:
        steps.append(StallCut.merged([space.stall_cuts[i] for i in choice.stall_cuts]))
    steps += [space.dominator_hoists[i] for i in choice.dominator_hoists]
    out = apply_each(code, steps, noalias)
    if out.skipped:
        raise ReorderError(f"move rejected: {out.skipped[0]}")
    return out


def _independent_swaps(swaps: list[Swap]) -> list[Swap]:
    """Drop a swap that touches an instruction an earlier chosen swap already moved."""
    taken: set[int] = set()
    kept = []
    for s in sorted(swaps, key=lambda s: s.index):
        if {s.index, s.index + 1} & taken:
            continue
        taken |= {s.index, s.index + 1}
        kept.append(s)
    return kept


@dataclass(frozen=True)
class Built:
    """A built candidate (bytes and digest) or the one-line reason it could not be built."""

    data: bytes | None
    sha256: str
    reason: str = ""
    moved: int = 0
    stalls: int = 0
    predicted_cycles: int = 0


def build_candidate(
    cubin_path: str,
    kernel: str,
    noalias: bool,
    choice: Choice,
    ptx: PtxLevel | None = None,
    families: tuple | None = None,
) -> Built:
    """Decode, rebuild the space (deterministic), apply the choice. Runs in joblib workers.
    A choice with PTX picks is built from the PTX (reorder.build.ptxlevel), not from the cubin."""
    from reorder.analysis.costmodel import kernel_cycles

    if choice.ptx:
        if ptx is None:
            return Built(None, "", "ptx: the choice has PTX moves and no PTX is at hand")
        made = build_ptx(ptx, choice.ptx, choice.sass)
        if made.data is None:
            return Built(None, "", made.reason)
        return Built(
            made.data,
            hashlib.sha256(made.data).hexdigest(),
            moved=len(made.applied),
            stalls=made.stalls,
            predicted_cycles=made.predicted_cycles,
        )
    code, space = _listed(Path(cubin_path).read_bytes(), cubin_path, kernel, noalias, families)
    try:
        out = apply_choice(code, space, choice, noalias)
    except ReorderError as exc:
        return Built(None, "", str(exc).splitlines()[0])
    return Built(
        out.data,
        hashlib.sha256(out.data).hexdigest(),
        moved=out.moved,
        stalls=sum(i.ctrl.stall for i in out.after.instructions),
        predicted_cycles=kernel_cycles(out.after.instructions),
    )


@lru_cache(maxsize=4)
def _listed(
    data: bytes, where: str, kernel: str, noalias: bool, families: tuple | None
) -> tuple[KernelCode, SearchSpace]:
    """The decoded kernel and its space, listed once per process for the same bytes: a run
    builds every candidate of one kernel from them (the winner's pruning alone builds ~20), and
    listing the families cost as much as applying a choice. Moves never change the code they
    are given (frozen values), so the one listing serves every build."""
    code = decode_kernel(parse_cubin(data, where), kernel)
    return code, search_space(code, noalias, families)


def build_cached(
    cache: str | None,
    cubin_path: str,
    kernel: str,
    noalias: bool,
    choice: Choice,
    ptx: PtxLevel | None = None,
    families: tuple | None = None,
) -> Built:
    """`build_candidate`, kept in the folder `cache` (one run's, None for none): the finalists
    are the search's own best trials, and building them again cost as much as the search (on
    a 5,696-instruction k-select kernel, one trial: 66 s in all before, 33 s with this and the
    kept instruction hashes). The key is every input of the build (the cubin's bytes, the kernel, the alias
    assumption, the choice, the PTX's bytes); the building code is the run's own."""
    if cache is None:
        return build_candidate(cubin_path, kernel, noalias, choice, ptx, families)
    key = hashlib.sha256(
        repr(
            (
                hashlib.sha256(Path(cubin_path).read_bytes()).hexdigest(),
                kernel,
                noalias,
                choice,
                (ptx, ptx.digest()) if ptx else None,
                *((families,) if families is not None else ()),
            )
        ).encode()
    ).hexdigest()
    path = Path(cache) / f"{key}.pickle"
    try:
        held = pickle.loads(path.read_bytes())
        if isinstance(held, Built):
            return held
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        pass
    built = build_candidate(cubin_path, kernel, noalias, choice, ptx, families)
    write_atomic(path, pickle.dumps(built))  # whole or absent: workers write beside each other
    return built
