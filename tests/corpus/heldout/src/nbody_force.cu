// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// All-pairs gravitational acceleration with a shared tile of bodies (float4: x, y, z, mass).
extern "C" __global__ void nbody_force(float3 *__restrict__ acc, const float4 *__restrict__ pos, int n, float eps2) {
    __shared__ float4 tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    float3 a = make_float3(0.f, 0.f, 0.f);
    for (int base = 0; base < n; base += 128) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
#pragma unroll 8
        for (int t = 0; t < 128; ++t) {
            float4 o = tile[t];
            float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
            float inv = rsqrtf(dx * dx + dy * dy + dz * dz + eps2);
            float s = o.w * inv * inv * inv;
            a.x += dx * s; a.y += dy * s; a.z += dz * s;
        }
        __syncthreads();
    }
    if (i < n) acc[i] = a;
}
