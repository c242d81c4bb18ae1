// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// Open-addressing insert of 64-bit keys (xorshift-multiply hash, linear probing with CAS).
extern "C" __global__ void hash_insert_i64(unsigned long long *__restrict__ table, const unsigned long long *__restrict__ keys,
                                           unsigned mask, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long key = keys[i];
    unsigned long long h = key ^ (key >> 33);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    unsigned slot = (unsigned)(h ^ (h >> 33)) & mask;
    for (unsigned probe = 0; probe <= mask; ++probe) {
        unsigned long long prev = atomicCAS(&table[slot], 0ull, key);
        if (prev == 0ull || prev == key) return;
        slot = (slot + 1) & mask;
    }
}
