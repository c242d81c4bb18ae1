// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// Dense matrix-vector product, float4 loads of a row, one warp per row.
extern "C" __global__ void gemv_rows_f4(float *__restrict__ y, const float4 *__restrict__ a, const float4 *__restrict__ x,
                                        int rows, int cols4, float beta) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    float acc = 0.0f;
    for (int c = threadIdx.x & 31; c < cols4; c += 32) {
        float4 m = a[(size_t)row * cols4 + c], v = x[c];
        acc += m.x * v.x + m.y * v.y + m.z * v.z + m.w * v.w;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) y[row] = beta * y[row] + acc;
}
