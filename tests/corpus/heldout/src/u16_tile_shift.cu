// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.

// 16-bit pixels through a padded shared tile: a 3-tap horizontal blur with saturation, u16 in and out.
extern "C" __global__ void u16_tile_shift(unsigned short *__restrict__ out, const unsigned short *__restrict__ in, int w,
                                          int h) {
    __shared__ unsigned short tile[16][34];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    bool inside = x < w && y < h;
    tile[threadIdx.y][threadIdx.x + 1] = inside ? in[y * w + x] : 0;
    if (threadIdx.x == 0) tile[threadIdx.y][0] = (x > 0 && y < h) ? in[y * w + x - 1] : 0;
    if (threadIdx.x == 31) tile[threadIdx.y][33] = (x + 1 < w && y < h) ? in[y * w + x + 1] : 0;
    __syncthreads();
    if (!inside) return;
    unsigned s = tile[threadIdx.y][threadIdx.x] + 2u * tile[threadIdx.y][threadIdx.x + 1] + tile[threadIdx.y][threadIdx.x + 2];
    out[y * w + x] = (unsigned short)min(s >> 1, 65535u);
}
