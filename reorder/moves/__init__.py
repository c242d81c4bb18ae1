"""SASS moves: frozen values of one shape (`protocol`: name, instances(code, options), blocks,
apply) listed in `families`: StallCut, Swap, LoadBatch (`core`) and SliceBatch (`slicebatch`);
the scheduler that gives a new order its control codes (`schedule`).

The scheduler walks a block with the verifier's own state machine (`legality.verify.step`) in
repair mode, and every result is then judged by `legality.verify` over the whole kernel: the
two share their model of latencies and scoreboards, so the verifier's verdict on a schedule
is not a second opinion on that model. The second opinions are the compiler's own schedules
(legality.inherited: nothing may be closer than the tables allow where ptxas never went) and
the byte-equality checks on the GPU.
"""
