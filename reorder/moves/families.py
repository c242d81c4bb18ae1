"""The SASS move families the build knows, in the order a candidate applies them
(reorder.build.space): loads cross barriers first, then slices and loads move, then swaps, then
stall cuts recompute what is left, then loads move into the block before theirs (last: the
others name blocks by index, which that move shifts). A new family is a module in reorder/moves
with the shape of `reorder.moves.protocol`, and a line here."""

from __future__ import annotations

from reorder.moves.barrierhoist import BarrierHoist
from reorder.moves.core import LoadBatch, StallCut, Swap
from reorder.moves.dominatorhoist import DominatorHoist
from reorder.moves.protocol import MoveFamily
from reorder.moves.slicebatch import SliceBatch

# Each family's `name` is a dataclass field with a default, which mypy takes for an instance
# variable where the protocol reads it from the class: the one assignment it cannot check.
FAMILIES: tuple[MoveFamily, ...] = (BarrierHoist, SliceBatch, LoadBatch, Swap, StallCut, DominatorHoist)  # type: ignore[assignment]
