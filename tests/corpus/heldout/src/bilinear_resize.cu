// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Bilinear resize of an RGBA8 image (uchar4 pixels), coordinates clamped at the border.
extern "C" __global__ void bilinear_resize(uchar4 *__restrict__ dst, const uchar4 *__restrict__ src, int sw, int sh,
                                           int dw, int dh) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh) return;
    float fx = fmaxf((x + 0.5f) * sw / dw - 0.5f, 0.f), fy = fmaxf((y + 0.5f) * sh / dh - 0.5f, 0.f);
    int x0 = min((int)fx, sw - 1), y0 = min((int)fy, sh - 1);
    int x1 = min(x0 + 1, sw - 1), y1 = min(y0 + 1, sh - 1);
    float ax = fx - x0, ay = fy - y0;
    uchar4 p00 = src[y0 * sw + x0], p01 = src[y0 * sw + x1], p10 = src[y1 * sw + x0], p11 = src[y1 * sw + x1];
    float r = (1 - ay) * ((1 - ax) * p00.x + ax * p01.x) + ay * ((1 - ax) * p10.x + ax * p11.x);
    float g = (1 - ay) * ((1 - ax) * p00.y + ax * p01.y) + ay * ((1 - ax) * p10.y + ax * p11.y);
    float b = (1 - ay) * ((1 - ax) * p00.z + ax * p01.z) + ay * ((1 - ax) * p10.z + ax * p11.z);
    float a = (1 - ay) * ((1 - ax) * p00.w + ax * p01.w) + ay * ((1 - ax) * p10.w + ax * p11.w);
    dst[y * dw + x] = make_uchar4((unsigned char)(r + 0.5f), (unsigned char)(g + 0.5f), (unsigned char)(b + 0.5f),
                                  (unsigned char)(a + 0.5f));
}
