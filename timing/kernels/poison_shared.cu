// Fills the dynamic shared memory of every block with one 32-bit pattern.
// Launched before each checked launch (timing.poison) with the largest opt-in shared
// memory and enough blocks to cover every SM, so that a candidate reading shared memory
// before another warp's store has landed reads the pattern (NaN for 0xFFFFFFFF) instead of
// the value a previous launch of the same kernel left there by coincidence.
extern "C" __global__ void poison_shared(unsigned int pattern, unsigned int words)
{
    extern __shared__ unsigned int smem[];
    volatile unsigned int *v = smem;
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)
        v[i] = pattern;
}
