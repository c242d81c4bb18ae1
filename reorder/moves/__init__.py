"""SASS moves: frozen values of one shape (`protocol`: name, instances(code, options), blocks,
apply) listed in `families`: StallCut, Swap, LoadBatch (`core`) and SliceBatch (`slicebatch`);
the scheduler that gives a new order its control codes (`schedule`).

The scheduler computes a block's stalls and waits with its own model (`distances`: the latency
tables, the read and write sets), and asks `legality.verify` only for a verdict on the block it
placed (`block_violations`: Violation values); what the verdict faults that the model does not
cover (what was in flight at the block's entry, ops without a scoreboard) is learnt and the block
planned again. Every result is then judged by `legality.verify` over the whole written kernel. The
two share the latency tables, not the walk: a verdict checks the scheduler's arithmetic, not the
tables; the second opinions on the tables are the compiler's own schedules (legality.inherited:
nothing may be closer than the tables allow where ptxas never went) and the byte-equality checks
on the GPU.
"""
