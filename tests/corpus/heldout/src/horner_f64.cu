// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.

// A degree-9 polynomial in FP64 by Horner's rule over a clamped argument, and its ratio to 1 + x^2.
extern "C" __global__ void horner_f64(double *__restrict__ y, const double *__restrict__ x, const double *__restrict__ c,
                                      int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double t = fmin(fmax(x[i], -4.0), 4.0);
    double p = c[9];
#pragma unroll
    for (int k = 8; k >= 0; --k) p = fma(p, t, c[k]);
    y[i] = p / fma(t, t, 1.0);
}
