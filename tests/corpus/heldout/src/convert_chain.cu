// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).
#include <cuda_fp16.h>

// Conversions in a chain: double -> float -> half -> int -> 64-bit -> double, with rounding modes.
extern "C" __global__ void convert_chain(double *__restrict__ out, unsigned long long *__restrict__ bits,
                                         const double *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double d = in[i];
    float f = __double2float_rz(d);
    __half h = __float2half_rn(f * 0.5f);
    int k = __half2int_rd(h) + __float2int_ru(f);
    long long w = __double2ll_rn(d * 1024.0) + k;
    unsigned u = __double2uint_rd(fabs(d));
    double back = __ll2double_rz(w) + __uint2double_rn(u) + (double)__half2float(h);
    out[i] = back;
    bits[i] = __double_as_longlong(back) ^ (unsigned long long)__float_as_uint(f);
}
