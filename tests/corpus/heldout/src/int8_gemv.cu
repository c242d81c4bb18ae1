// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// y = A x over int8 rows with __dp4a, int32 accumulation, per-row scale to float.
extern "C" __global__ void int8_gemv(float *__restrict__ y, const char4 *__restrict__ a, const char4 *__restrict__ x,
                                     const float *__restrict__ scale, int rows, int cols4) {
    int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int acc = 0;
    for (int c = lane; c < cols4; c += 32) {
        char4 av = a[(size_t)row * cols4 + c], xv = x[c];
        acc = __dp4a(*reinterpret_cast<int *>(&av), *reinterpret_cast<int *>(&xv), acc);
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, 16);
    acc += __shfl_xor_sync(0xffffffffu, acc, 8);
    acc += __shfl_xor_sync(0xffffffffu, acc, 4);
    acc += __shfl_xor_sync(0xffffffffu, acc, 2);
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if (lane == 0) y[row] = (float)acc * scale[row];
}
