"""Listing a kernel's move space within the time a run gives it.

On most kernels every family lists in well under a second. On a large one a family's
analysis can take minutes (a 20,000-instruction unrolled kernel), and a run told `--time
40s` must not spend them before its first trial. So each family is listed under its share
of the listing time (reorder.base.deadline.move_on_at): the families left when one is cut
share what remains, and a family that cannot be listed in its share is left out of the
search and named in the report. Stall cuts come first: they are the cheapest and always
legal to try.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from reorder.base.deadline import move_on_at
from reorder.build.ptxlevel import PtxLevel
from reorder.build.space import FAMILIES, SearchSpace, family_instances, from_lists
from reorder.sass.model import KernelCode


@dataclass(frozen=True)
class Listed:
    """The space listed, and a line for each family or level that was not."""

    space: SearchSpace
    cut: tuple[str, ...] = ()


def list_space(code: KernelCode, noalias: bool, ptx: PtxLevel | None, until: float) -> Listed:
    """The kernel's SASS families (and the PTX level's first decisions, when PTX is at hand),
    each listed by `until` (time.monotonic) at the latest, in FAMILIES order, each given an
    equal share of the time left when it starts."""
    found: dict[str, tuple] = {}
    cut: list[str] = []
    order = [*FAMILIES, *(("ptx",) if ptx is not None else ())]
    for k, family in enumerate(order):
        share = (until - time.monotonic()) / (len(order) - k)
        began = time.monotonic()
        with move_on_at(time.monotonic() + max(0.0, share)) as step:
            if ptx is not None and family == "ptx":
                ptx.size_line()  # walks the first stage: what every trial's sampling walks again
            else:
                found[family] = family_instances(code, noalias, family)
        if step.reached:
            name = "PTX moves" if family == "ptx" else family.replace("_", " ")
            cut.append(f"{name}: not listed in its {time.monotonic() - began:.1f} s share")
    listed = tuple(f for f in FAMILIES if f in found)
    space = from_lists(
        found,
        listed if len(listed) < len(FAMILIES) else None,
        ptx if ptx is not None and not any(c.startswith("PTX") for c in cut) else None,
    )
    return Listed(space, tuple(cut))
