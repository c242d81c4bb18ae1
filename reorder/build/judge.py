"""Judging a PTX-route output by its route: every step remade from the input, then compared.

The output of a PTX-route optimize (reorder.build.record) is ptxas's build of the input's PTX
with PTX moves made, then SASS moves on that build. Each of the three is judged by the rules
that hold for it:

1. the PTX moves: remade on the input's PTX, each pick by its kind (reorder.ptx.space.registry),
   whose instances are exactly the moves the PTX legality rules allow there (a pick the rules
   do not allow on this PTX is not offered, and the route fails there); the moved PTX must
   be the one the output was built from, byte for byte (its digest in the record);
2. ptxas's build of the moved PTX: made again with its producer's ptxas and flags, its
   bytes compared with the record's digest (another ptxas makes another build, and the
   output cannot be judged against it), and the kernel judged as compiler output: nothing
   beyond ptxas's own schedule may be flagged (reorder.build.ptxcandidate.verdict);
3. the SASS moves on that build: every kernel of the output verified against the build's
   same kernel, as any reordering is judged against the binary it was made from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from legality.verify import Report, verify_kernel
from reorder.base.errors import NotApplicable, ReorderError
from reorder.binary.cubin import Cubin, parse_cubin
from reorder.build.ptxbuild import ptx_build
from reorder.build.ptxlevel import ptx_level
from reorder.build.record import PtxRoute, Record, sha256
from reorder.ptx.space.registry import Pick
from reorder.ptx.space.searchspace import rebuild
from reorder.sass.model import decode_kernel


@dataclass(frozen=True)
class RouteJudgement:
    """What was remade and checked (`steps`, one line each), why the route is not proven
    (`failure`, '' when it is), and the output's kernels judged against the rebuilt build."""

    steps: tuple[str, ...]
    failure: str = ""
    reports: tuple[Report, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failure and all(r.ok for r in self.reports)


def judge_ptx_route(out: Cubin, record: Record, ptx: Path, names: list[str]) -> RouteJudgement:
    """Judge `out` (its kernels `names`) by the PTX route in `record`, remade from `ptx`."""
    route = record.ptx
    assert route is not None  # the caller judges PTX-route records only
    steps: list[str] = []
    arch = decode_kernel(out, record.kernel).arch
    try:
        level = ptx_level(ptx, record.kernel, route.noalias, arch)
        picks = tuple(Pick(kind, key, choice) for kind, key, choice in route.picks)
        done = rebuild(level.module(), level.options, picks)
    except NotApplicable as exc:
        return RouteJudgement(tuple(steps), f"PTX moves: {exc} on {ptx}: the PTX legality rules do not allow it there")
    except ReorderError as exc:
        return RouteJudgement(tuple(steps), f"PTX moves: cannot remake them on {ptx}: {exc}")
    if sha256(done.module.text.encode()) != route.moved_sha256:
        return RouteJudgement(tuple(steps), f"PTX moves: remade on {ptx}, they give another PTX than the output's")
    taken = f" (its kernel {level.given_name})" if level.given_name else ""
    steps.append(
        f"PTX moves re-checked on {ptx}{taken}: {' '.join(done.applied)}: each allowed there by the PTX "
        f"legality rules{', pointer parameters assumed not to alias' if route.noalias else ''}; the moved PTX "
        "remade byte for byte"
    )
    return _judge_build(out, route, level, done.module, names, steps)


def _judge_build(out: Cubin, route: PtxRoute, level, module, names: list[str], steps: list[str]) -> RouteJudgement:
    """Steps 2 and 3 of the module docstring."""
    try:
        build = ptx_build(level, module)
    except ReorderError as exc:
        return RouteJudgement(tuple(steps), f"ptxas build: {exc}")
    if sha256(build.data) != route.build_sha256:
        return RouteJudgement(
            tuple(steps),
            f"ptxas build: {build.recipe} makes other bytes than the build the output was made from "
            f"({route.recipe}); another ptxas: the SASS moves cannot be judged against this one",
        )
    v = build.verdict
    if not v.ok:
        return RouteJudgement(
            tuple(steps), f"ptxas build ({build.recipe}): judged as compiler output: {v.violations[0]}"
        )
    tighter = (
        f", {len(v.inherited)} pairs ptxas scheduled tighter than the tables (its own schedule)" if v.inherited else ""
    )
    steps.append(
        f"ptxas build ({build.recipe}) of the moved PTX remade byte for byte; judged as compiler output: legal{tighter}"
    )
    base = parse_cubin(build.data, "ptxas's build of the moved PTX")
    missing = [n for n in names if n not in {k.name for k in base.kernels}]
    if missing:
        return RouteJudgement(tuple(steps), f"the output has kernels ptxas's build has not: {', '.join(missing)}")
    reports = tuple(verify_kernel(decode_kernel(out, n), original=decode_kernel(base, n).instructions) for n in names)
    steps.append(f"SASS moves ({route.sass or 'none'}) judged against that build, kernel by kernel:")
    return RouteJudgement(tuple(steps), "", reports)
