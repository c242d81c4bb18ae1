// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// Stream compaction of positive values with a warp ballot and one atomic per warp.
extern "C" __global__ void compact_positive(float *__restrict__ out, int *__restrict__ count,
                                            const float *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    bool keep = v > 0.0f;
    unsigned ballot = __ballot_sync(0xffffffffu, keep);
    int lane = threadIdx.x & 31;
    int base = 0;
    if (lane == 0 && ballot) base = atomicAdd(count, __popc(ballot));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (keep) out[base + __popc(ballot & ((1u << lane) - 1))] = v;
}
