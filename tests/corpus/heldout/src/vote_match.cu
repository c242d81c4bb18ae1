// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.

// Warp votes: ballot, any/all, match on equal keys, and the lane rank inside each match group.
extern "C" __global__ void vote_match(int *__restrict__ rank, unsigned *__restrict__ summary, const int *__restrict__ keys,
                                      int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int key = i < n ? keys[i] : -1;
    unsigned active = __ballot_sync(0xffffffffu, key >= 0);
    unsigned peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    int r = __popc(peers & ((1u << lane) - 1));
    bool all_pos = __all_sync(0xffffffffu, key > 0);
    bool any_big = __any_sync(0xffffffffu, key > 1000);
    if (i < n) rank[i] = r;
    if (lane == 0) summary[i / 32] = active ^ (all_pos ? 0x80000000u : 0u) ^ (any_big ? 1u : 0u);
}
