// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// One radix-2 decimation-in-time butterfly stage over complex float2 data.
extern "C" __global__ void fft_radix2(float2 *__restrict__ data, int n, int half_span) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / 2) return;
    int group = t / half_span, k = t % half_span;
    int i0 = group * 2 * half_span + k, i1 = i0 + half_span;
    float s, c;
    __sincosf(-3.14159265f * k / half_span, &s, &c);
    float2 a = data[i0], b = data[i1];
    float2 w = make_float2(b.x * c - b.y * s, b.x * s + b.y * c);
    data[i0] = make_float2(a.x + w.x, a.y + w.y);
    data[i1] = make_float2(a.x - w.x, a.y - w.y);
}
