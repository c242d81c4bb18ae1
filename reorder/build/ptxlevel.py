"""The PTX level of an optimize search: candidates that are PTX moves, then the producer's
ptxas, then SASS moves on what ptxas made.

A candidate with PTX picks (reorder.ptx.space.searchspace: the registered kinds walked in stage
order) is built as: the picks rebuilt on the source PTX, the moved PTX compiled the way its
producer compiles it (reorder.ptx.toolchain.compile: Triton's ptxas and flags for Triton's PTX, ptxas -O3
for nvcc's), ptxas's cubin verified as a compiler's cubin is (reorder.build.ptxcandidate.verdict:
nothing beyond ptxas's own schedule may be flagged), then one combination of SASS move
families on top (stall cuts, slice or load batching: every instance of the family, listed
on that very cubin, each step verified as `reorder stalls` verifies it). The SASS families
are one parameter, not one per instance: their instances are listed on a cubin each PTX
candidate makes anew, so per-instance parameters would mean nothing from one trial to the
next. A trial that picks no PTX move is the SASS-only search, instance by instance, on the
original cubin, exactly as without PTX.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from reorder.analysis.costmodel import kernel_cycles
from reorder.base.errors import InputError, ReorderError
from reorder.binary.cubin import parse_cubin
from reorder.build.pipeline import Outcome, apply_each
from reorder.build.ptxcandidate import read_ptx, verdict
from reorder.build.ptxnames import ptx_for_kernel
from reorder.moves.core import LoadBatch, StallCut
from reorder.moves.protocol import MoveOptions as SassOptions  # the PTX kinds' MoveOptions is another
from reorder.moves.slicebatch import SliceBatch
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.moves.peel import PeelLoop
from reorder.ptx.space.plans import loads_reaching
from reorder.ptx.space.registry import OFF, Instance, MoveOptions, Pick, registered
from reorder.ptx.space.searchspace import first_stage, from_params, rebuild, walk
from reorder.ptx.toolchain.compile import Recipe, compile_ptx, read_head
from reorder.sass.model import KernelCode, decode_kernel

SASS_PARAM = "sass"  # the SASS families on a PTX candidate's cubin
SASS_COMBOS = ("none", "sc", "sb", "lb", "sb+sc", "lb+sc")  # the combinations the SASS search seeds with


@dataclass(frozen=True, slots=True)
class PtxLevel:
    """The PTX at hand for one kernel, and the no-alias assumption its moves run under."""

    path: str
    kernel: str
    noalias: bool
    producer: str  # 'nvcc' or 'triton'
    # when the PTX names the kernel with another anonymous-namespace suffix than the cubin
    # (reorder.build.ptxnames): the --ptx file as given, and the kernel's name there; `path`
    # is then the copy with the kernel renamed to the cubin's symbol
    given: str = ""
    given_name: str = ""
    recipe: Recipe | None = None  # the producer's exact ptxas and flags (a Triton config's), else its default

    @property
    def options(self) -> MoveOptions:
        return MoveOptions(self.kernel, self.noalias)

    def module(self) -> Module:
        return _module(self.path)

    def digest(self) -> str:
        return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()[:12]

    def size_line(self) -> str:
        offered = first_stage(self.module(), self.options)
        kinds = sorted({i.kind for i in offered})
        renamed = (
            f", its kernel {self.given_name} taken as the cubin's (anonymous-namespace suffix ignored)"
            if self.given_name
            else ""
        )
        return (
            f"PTX moves ({self.producer} PTX, {Path(self.path).name}{renamed}): {len(offered)} decisions before any is "
            f"taken ({', '.join(kinds) or 'none'}; later stages add decisions), then ptxas, then SASS "
            f"families {'/'.join(SASS_COMBOS[1:])}"
        )


@lru_cache(maxsize=4)
def _module(path: str) -> Module:
    return read_ptx(Path(path))


def ptx_level(path: Path, kernel: str, noalias: bool, arch: int, recipe: Recipe | None = None) -> PtxLevel:
    """The PTX level for `kernel`, or one InputError saying why this PTX cannot serve it;
    `recipe` compiles every candidate (the producer's own ptxas and flags when they are known
    exactly, as for a Triton config), else the producer's default (reorder.ptx.toolchain.compile)."""
    data = path.read_bytes() if path.is_file() else b""
    head = read_head(data)
    if head is None:
        raise InputError(f"--ptx {path}: not a PTX file")
    if head.sm != arch:
        raise InputError(f"--ptx {path}: PTX for {head.target}, the cubin is sm_{arch}")
    try:
        source, name = ptx_for_kernel(path, read_ptx(path), kernel)
    except UnicodeDecodeError:
        raise InputError(f"--ptx {path}: not PTX text") from None
    if source == path:
        return PtxLevel(str(path.resolve()), kernel, noalias, head.producer, recipe=recipe)
    return PtxLevel(
        str(source), kernel, noalias, head.producer, given=str(path.resolve()), given_name=name, recipe=recipe
    )


def sample(trial, level: PtxLevel) -> tuple[Pick, ...]:
    """The trial's PTX picks (define-by-run: later kinds' parameters exist only when reached)."""
    return walk(
        level.module(), level.options, lambda inst: trial.suggest_categorical(inst.param, list(inst.choices))
    ).picks


def picks_of(params: dict, level: PtxLevel) -> tuple[Pick, ...]:
    """The PTX picks of a finished trial, from its parameters."""
    return from_params(level.module(), level.options, params).picks


def off_params(level: PtxLevel) -> dict:
    """Every first-stage decision OFF: what a SASS-only seed adds so it stays SASS-only."""
    return {inst.param: OFF for inst in first_stage(level.module(), level.options)}


def seed_params(level: PtxLevel) -> list[dict]:
    """The PTX plans (reorder.ptx.space.plans) as seeds, each without and with stall cuts, distinct
    PTX only: loads above the barriers, the same loads as far up as legal, loads above the
    stores, and every load as far up as legal. A loop is peeled for a plan only when its
    copy then holds a load the plan moves (as plans.py peels)."""
    module, options = level.module(), level.options
    seeds, texts = [], set()
    for placement, which in (("barrier", "barrier"), ("top", "barrier"), ("store", "store"), ("top", None)):
        params: dict = {}
        helpful = _helpful_peels(module, options, which or "top")

        def decide(inst: Instance, placement=placement, which=which, params=params, helpful=helpful) -> str:
            if inst.kind == "peel":
                choice = "on" if inst.key in helpful else OFF
            elif inst.kind == "hoist" and placement in inst.choices and (which is None or which in inst.choices):
                choice = placement
            else:
                choice = OFF
            params[inst.param] = choice
            return choice

        done = walk(module, options, decide)
        if done.applied and done.module.text not in texts:
            texts.add(done.module.text)
            seeds.append(params)
    return [{**p, SASS_PARAM: combo} for combo in ("none", "sc") for p in seeds]


def loop_seed_params(level: PtxLevel) -> list[dict]:
    """Each loop move alone, at each of its alternatives (prefetch at every distance, unroll
    by each factor), distinct PTX only: whether a loop pays and how far ahead depends on the
    launch shape (reorder.ptx.space.loopkinds), so a search, over one shape or several, starts from
    each of them measured rather than waiting for its sampler to reach them."""
    module, options = level.module(), level.options
    seeds, texts = [], set()
    for loop in (i for i in first_stage(module, options) if i.kind == "loop"):
        for alternative in loop.choices[1:]:
            params: dict = {}

            def decide(inst: Instance, key=loop.key, alternative=alternative, params=params) -> str:
                mine = inst.kind == "loop" and inst.key == key and alternative in inst.choices
                params[inst.param] = alternative if mine else OFF
                return params[inst.param]

            done = walk(module, options, decide)
            if done.applied and done.module.text not in texts:
                texts.add(done.module.text)
                seeds.append({**params, SASS_PARAM: "none"})
    return seeds


SEEDED_ELSEWHERE = ("peel", "hoist", "loop")  # the plans and loop_seed_params seed these


def kind_seed_params(level: PtxLevel) -> list[dict]:
    """Each other kind alone (reuse, wgmma, any kind registered later), every instance of it
    at one alternative, distinct PTX only. Without them a study whose PTX offers only such a
    kind started from SASS moves alone: on a Triton GEMM whose only PTX decision was the wgmma
    step (the twin that ran 1.3x on the H200), a 6-trial search never sampled it."""
    module, options = level.module(), level.options
    offered = {(i.kind, c) for i in first_stage(module, options) for c in i.choices[1:]}
    later = {k.name for k in registered()} - {i.kind for i in first_stage(module, options)}
    wanted = sorted(offered | {(k, "on") for k in later})
    seeds, texts = [], set()
    for kind, alternative in wanted:
        if kind in SEEDED_ELSEWHERE:
            continue
        params: dict = {}

        def decide(inst: Instance, kind=kind, alternative=alternative, params=params) -> str:
            mine = inst.kind == kind and alternative in inst.choices
            params[inst.param] = alternative if mine else OFF
            return params[inst.param]

        done = walk(module, options, decide)
        if any(p.kind == kind for p in done.picks) and done.module.text not in texts:
            texts.add(done.module.text)
            seeds.append({**params, SASS_PARAM: "none"})
    return seeds


def _helpful_peels(module: Module, options: MoveOptions, which: str) -> set[str]:
    """Headers of the loops whose peeled copy holds a load with a `which` destination."""
    found = set()
    before = {s.ident for s in module.function(options.kernel).body}
    for peel in PeelLoop.instances(module, options.kernel):
        after = peel.apply(module)
        copied = {s.ident for s in after.function(options.kernel).body} - before
        if loads_reaching(after, options.kernel, options.noalias, which, only=copied):
            found.add(peel.header)
    return found


@dataclass(frozen=True, slots=True)
class PtxBuilt:
    """A PTX candidate's cubin bytes, or why there is none; what was made at each level."""

    data: bytes | None
    reason: str = ""
    applied: tuple[str, ...] = ()
    sass_steps: int = 0
    stalls: int = 0
    predicted_cycles: int = 0


def moved_ptx(level: PtxLevel, picks: tuple[Pick, ...]) -> tuple[Module, tuple[str, ...]]:
    """The source PTX with the picks made, and the moves made (NotApplicable when a pick is
    not offered)."""
    done = rebuild(level.module(), level.options, picks)
    return done.module, done.applied


def compiled(level: PtxLevel, module: Module) -> KernelCode:
    """ptxas's build of a moved PTX (its producer's ptxas and flags; content-cached), verified:
    one ReorderError when the verifier flags anything beyond ptxas's own schedule."""
    with tempfile.TemporaryDirectory(prefix="reorder-ptx-") as tmp:
        path = Path(tmp) / Path(level.path).name
        path.write_text(module.text)
        made = compile_ptx(path, level.recipe)
        if made is None:
            raise InputError("the moved PTX does not read as PTX")
        checked = verdict(made.cubin, level.kernel)
        if not checked.ok:
            raise ReorderError(f"verifier rejected ptxas's build: {checked.violations[0]}")
        return decode_kernel(parse_cubin(made.cubin.read_bytes(), str(made.cubin)), level.kernel)


def build(level: PtxLevel, picks: tuple[Pick, ...], sass: str) -> PtxBuilt:
    """Build one two-level candidate (see the module docstring); never raises ReorderError."""
    try:
        module, applied = moved_ptx(level, picks)
        if not applied:
            return PtxBuilt(None, "ptx: the picked moves made no change")
        code = compiled(level, module)
        outcome = apply_families(code, sass, level.noalias) if sass else None
    except ReorderError as exc:
        return PtxBuilt(None, f"ptx: {str(exc).splitlines()[0]}")
    after = outcome.after if outcome else code
    data = outcome.data if outcome else code.cubin.data
    return PtxBuilt(
        data,
        applied=applied,
        sass_steps=len(outcome.applied) if outcome else 0,
        stalls=sum(i.ctrl.stall for i in after.instructions),
        predicted_cycles=kernel_cycles(after.instructions),
    )


def apply_families(code: KernelCode, combo: str, noalias: bool) -> Outcome:
    """Every instance of the combination's SASS families on `code`, each step verified; a
    step the verifier or the encoder rejects is left out (the family is a whole, its parts
    are not picks)."""
    families = set(combo.split("+"))
    unknown = families - {"sb", "lb", "sc"}
    if unknown:
        raise InputError(f"SASS families {combo!r}: expected a combination of sb, lb, sc")
    steps: list = []
    if "sb" in families:
        steps += SliceBatch.instances(code, SassOptions(noalias=noalias))
    if "lb" in families:
        steps += LoadBatch.instances(code, SassOptions(noalias=noalias))
    cuts = StallCut.instances(code) if "sc" in families else []
    if cuts:
        steps.append(StallCut.merged(cuts))
    return apply_each(code, steps)


def ptx_diff(level: PtxLevel, moved: Module) -> str:
    """A unified diff of the kernel's PTX, original against moved."""
    import difflib

    before = parse_module(level.module().text).function(level.kernel).text.splitlines(keepends=True)
    after = moved.function(level.kernel).text.splitlines(keepends=True)
    name = Path(level.path).name
    return "".join(difflib.unified_diff(before, after, f"{name} ({level.kernel})", f"{name} (moved)"))
