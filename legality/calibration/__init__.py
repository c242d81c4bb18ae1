"""Calibration set for the ptxas-observed latency tables: CUDA kernels of our own, generated.

The verifier reuses a distance ptxas itself left only for the exact producer opcode,
consumer opcode and consumer operand slot it was seen with (`legality.latency`), so a
compiler output with a pair the calibration never saw is called illegal. `kernels`
writes a few hundred small kernels that combine the things compilers emit (int, int64,
float, double and half arithmetic, conversions, predication, shared memory, shuffles,
votes, atomics, vector memory, address arithmetic, loops, uniform-datapath parameters,
division, math functions); `build` compiles them with nvcc/ptxas for every arch reorder
reads and every ptxas -O level, and `__main__` runs the whole calibration:

    python -m legality.calibration [--work DIR] [--jobs N]

Nothing generated is checked in but the tables; the kernels are a pure function of the
seed, so the same toolkit regenerates the same tables.
"""
