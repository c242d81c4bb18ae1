// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// Matrix transpose through a padded 32x33 shared tile (32x8 threads).
extern "C" __global__ void transpose_tile(float *__restrict__ out, const float *__restrict__ in, int rows, int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
