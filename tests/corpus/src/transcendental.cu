// Transcendentals (MUFU) and IEEE float division slow path.
// Compiled WITHOUT --use_fast_math, so a / b calls the division slow path.
#include <cuda_runtime.h>

// softplus + sigmoid using expf/logf.
extern "C" __global__ void softplus_sigmoid(float *__restrict__ sp,
                                            float *__restrict__ sg,
                                            const float *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float e = expf(-fabsf(v));
        sp[i] = fmaxf(v, 0.0f) + log1pf(e);
        sg[i] = (v >= 0.0f) ? 1.0f / (1.0f + e) : e / (1.0f + e);
    }
}

// Rotation by runtime angle: sinf/cosf (range reduction + MUFU.SIN/COS).
extern "C" __global__ void rotate_points(float2 *__restrict__ pts,
                                         const float *__restrict__ angle, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = sinf(angle[i]);
        float c = cosf(angle[i]);
        float2 p = pts[i];
        pts[i] = make_float2(c * p.x - s * p.y, s * p.x + c * p.y);
    }
}

// Vector normalisation with rsqrtf (MUFU.RSQ) and fast intrinsics.
extern "C" __global__ void normalize3(float *__restrict__ xyz, float eps, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
        float inv = rsqrtf(x * x + y * y + z * z + eps);
        xyz[3 * i] = x * inv;
        xyz[3 * i + 1] = y * inv;
        xyz[3 * i + 2] = z * inv * __expf(-eps);
    }
}

// Plain IEEE float division: fast path + CALL to the slow-path subroutine.
extern "C" __global__ void fdiv_ieee(float *__restrict__ q,
                                     const float *__restrict__ a,
                                     const float *__restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) q[i] = a[i] / b[i];
}

// Fast-math intrinsics mapping directly to MUFU.SIN/COS/LG2/EX2 and sqrt/tanh.
extern "C" __global__ void fast_intrinsics(float *__restrict__ out,
                                           const float *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float s = __sinf(v);
        float c = __cosf(v);
        float l = __log2f(fabsf(v) + 1.0f);
        float e = exp2f(-v * v);
        float q = sqrtf(fabsf(v));
        out[i] = s * c + l * e + q + tanhf(v);
    }
}
