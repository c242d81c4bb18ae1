// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Sobel gradient magnitude of an 8-bit image, clamped to 8 bits.
extern "C" __global__ void sobel_u8(unsigned char *__restrict__ out, const unsigned char *__restrict__ img, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
    const unsigned char *p = img + y * w + x;
    int gx = -p[-w - 1] - 2 * p[-1] - p[w - 1] + p[-w + 1] + 2 * p[1] + p[w + 1];
    int gy = -p[-w - 1] - 2 * p[-w] - p[-w + 1] + p[w - 1] + 2 * p[w] + p[w + 1];
    int mag = (int)sqrtf((float)(gx * gx + gy * gy));
    out[y * w + x] = (unsigned char)min(mag, 255);
}
