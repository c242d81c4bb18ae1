// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// CSR sparse matrix-vector product, one row per thread, double values, 64-bit row pointers.
extern "C" __global__ void spmv_csr_scalar_f64(double *__restrict__ y, const long long *__restrict__ rowptr,
                                               const int *__restrict__ colidx, const double *__restrict__ vals,
                                               const double *__restrict__ x, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    double acc = 0.0;
    for (long long p = rowptr[r]; p < rowptr[r + 1]; ++p) acc = fma(vals[p], __ldg(&x[colidx[p]]), acc);
    y[r] = acc;
}
