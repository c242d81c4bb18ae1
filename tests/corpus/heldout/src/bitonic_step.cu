// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// One compare-exchange step of a bitonic sort over 64-bit keys with 32-bit payloads.
extern "C" __global__ void bitonic_step(unsigned long long *__restrict__ keys, int *__restrict__ vals,
                                        int j, int k, int n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned partner = i ^ (unsigned)j;
    if (i >= (unsigned)n || partner <= i || partner >= (unsigned)n) return;
    bool up = (i & (unsigned)k) == 0;
    unsigned long long a = keys[i], b = keys[partner];
    if ((a > b) == up) {
        keys[i] = b;
        keys[partner] = a;
        int t = vals[i];
        vals[i] = vals[partner];
        vals[partner] = t;
    }
}
