"""SASS moves: named, frozen transformations that list their own legal instances (`core`:
StallCut, Swap, LoadBatch; `slicebatch`), and the scheduler that gives a new order its control
codes (`schedule`). Every result is judged by `legality`, which shares no code with the
scheduler."""
