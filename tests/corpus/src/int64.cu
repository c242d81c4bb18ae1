// 64-bit integer math, integer division/modulo, bit manipulation.
#include <cuda_runtime.h>

// splitmix64-style hashing: 64-bit multiply, shift, xor.
extern "C" __global__ void hash_u64(unsigned long long *__restrict__ out,
                                    const unsigned long long *__restrict__ in,
                                    unsigned long long seed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long z = in[i] + seed + 0x9e3779b97f4a7c15ull * (unsigned long long)i;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        out[i] = z ^ (z >> 31);
    }
}

// 64-bit accumulate with mul.hi and 64-bit comparisons.
extern "C" __global__ void mulhi_accumulate(long long *__restrict__ acc,
                                            const long long *__restrict__ a,
                                            const long long *__restrict__ b,
                                            long long limit, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long x = a[i];
        long long y = b[i];
        long long hi = __mul64hi(x, y);
        long long lo = x * y;
        long long r = (hi > limit) ? limit : (lo >> 7) + hi;
        acc[i] += r;
    }
}

// Runtime integer division and modulo (32-bit signed, 32/64-bit unsigned).
extern "C" __global__ void int_divmod(int *__restrict__ q, int *__restrict__ r,
                                      unsigned long long *__restrict__ q64,
                                      const int *__restrict__ a, int d,
                                      unsigned long long d64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i];
        q[i] = x / d;
        r[i] = x % d;
        q64[i] = ((unsigned long long)(unsigned)x << 20) / d64;
    }
}

// Bit tricks: popc, clz, brev, ffs.
extern "C" __global__ void bit_ops(unsigned *__restrict__ out,
                                   const unsigned *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = in[i];
        unsigned p = __popc(x);
        unsigned z = __clz(x);
        unsigned b = __brev(x);
        unsigned f = __ffs(x);
        unsigned long long w = ((unsigned long long)x << 32) | b;
        out[4 * i + 0] = p + __popcll(w);
        out[4 * i + 1] = z + __clzll(w);
        out[4 * i + 2] = b;
        out[4 * i + 3] = f;
    }
}
