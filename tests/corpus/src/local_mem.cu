// Local memory: per-thread arrays indexed at runtime (STL / LDL).
#include <cuda_runtime.h>

// Per-thread lookup table filled in a loop and read at data-dependent indices.
extern "C" __global__ void local_lut_gather(float *__restrict__ out,
                                            const float *__restrict__ base,
                                            const int *__restrict__ idx,
                                            int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float lut[32];
    float b = base[i];
    for (int k = 0; k < 32; ++k) lut[k] = b * (float)(k + 1) + (float)(k * k);
    float acc = 0.0f;
    for (int k = 0; k < 4; ++k) acc += lut[idx[4 * i + k] & 31];
    out[i] = acc;
}

// Per-thread insertion sort of a small window (runtime-indexed local array).
extern "C" __global__ void local_sort8(int *__restrict__ data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (8 * i + 7 >= n) return;
    int v[8];
    for (int k = 0; k < 8; ++k) v[k] = data[8 * i + k];
    for (int k = 1; k < 8; ++k) {
        int key = v[k];
        int j = k - 1;
        while (j >= 0 && v[j] > key) {
            v[j + 1] = v[j];
            --j;
        }
        v[j + 1] = key;
    }
    for (int k = 0; k < 8; ++k) data[8 * i + k] = v[k];
}
