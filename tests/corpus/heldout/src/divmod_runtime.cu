// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.

// Integer division and remainder by runtime divisors (signed 32-bit and unsigned 64-bit), as an
// index unflattening would do.
extern "C" __global__ void divmod_runtime(int *__restrict__ coords, unsigned long long *__restrict__ wide,
                                          const int *__restrict__ flat, int d0, int d1, unsigned long long q, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int f = flat[i];
    int a = f / d0, b = f % d0;
    int c = a / d1, d = a % d1;
    coords[3 * i] = b;
    coords[3 * i + 1] = d;
    coords[3 * i + 2] = c;
    unsigned long long v = (unsigned long long)f * 2654435761ull;
    wide[i] = v / q + v % q;
}
