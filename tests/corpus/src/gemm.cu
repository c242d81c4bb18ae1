// Tiny tiled SGEMM with shared memory: C = alpha*A*B + beta*C (row-major).
#include <cuda_runtime.h>

#define TILE 16

extern "C" __global__ void sgemm_tile16(float *__restrict__ C,
                                        const float *__restrict__ A,
                                        const float *__restrict__ B, int M,
                                        int N, int K, float alpha, float beta) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// Batched 4x4 matrix multiply, one matrix per thread, float4 rows.
extern "C" __global__ void batched_mat4(float4 *__restrict__ C,
                                        const float4 *__restrict__ A,
                                        const float4 *__restrict__ B, int batch) {
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= batch) return;
    float4 b0 = B[4 * m], b1 = B[4 * m + 1], b2 = B[4 * m + 2], b3 = B[4 * m + 3];
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
        float4 a = A[4 * m + r];
        float4 c;
        c.x = a.x * b0.x + a.y * b1.x + a.z * b2.x + a.w * b3.x;
        c.y = a.x * b0.y + a.y * b1.y + a.z * b2.y + a.w * b3.y;
        c.z = a.x * b0.z + a.y * b1.z + a.z * b2.z + a.w * b3.z;
        c.w = a.x * b0.w + a.y * b1.w + a.z * b2.w + a.w * b3.w;
        C[4 * m + r] = c;
    }
}
