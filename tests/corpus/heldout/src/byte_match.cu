// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Count positions where a 4-byte pattern matches, reading the text as uchar4 words and bytes.
extern "C" __global__ void byte_match(int *__restrict__ count, const unsigned char *__restrict__ text, unsigned pattern, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 3 >= n) return;
    unsigned w = text[i] | (text[i + 1] << 8) | (text[i + 2] << 16) | ((unsigned)text[i + 3] << 24);
    unsigned hits = __ballot_sync(__activemask(), w == pattern);
    if ((threadIdx.x & 31) == __ffs(__activemask()) - 1 && hits) atomicAdd(count, __popc(hits));
}
