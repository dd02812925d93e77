// Activations to int8 blocks, gates, residual adds and the embedding lookup: each output element by one
// fixed sequence of operations.

// x: [blocks, 32] float32 -> q [blocks, 32] int8, d [blocks] and sums [blocks], as kinetic_cpu's Q8_0:
// d = amax / 127 rounded to f16, q = x * (127 / amax) rounded half to even
extern "C" __global__ void quantize_q8(const float* __restrict__ x, int blocks, signed char* __restrict__ q,
                                       float* __restrict__ d, int* __restrict__ sums) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= blocks) return;
    const float4* v = (const float4*)(x + 32L * b);
    float4 values[8];
    float amax = 0.f;
    for (int i = 0; i < 8; i++) {
        values[i] = v[i];
        amax = fmaxf(amax, fmaxf(fmaxf(fabsf(values[i].x), fabsf(values[i].y)), fmaxf(fabsf(values[i].z), fabsf(values[i].w))));
    }
    float inverse = amax != 0.f ? __fdiv_rn(127.f, amax) : 0.f;
    int total = 0;
    int* out = (int*)(q + 32L * b);
    for (int i = 0; i < 8; i++) {
        int a = (int)rintf(__fmul_rn(values[i].x, inverse)), c = (int)rintf(__fmul_rn(values[i].y, inverse));
        int e = (int)rintf(__fmul_rn(values[i].z, inverse)), f = (int)rintf(__fmul_rn(values[i].w, inverse));
        total += a + c + e + f;
        out[i] = (a & 0xFF) | ((c & 0xFF) << 8) | ((e & 0xFF) << 16) | ((f & 0xFF) << 24);
    }
    d[b] = h2f(f2h(__fdiv_rn(amax, 127.f)));
    sums[b] = total;
}

// out = act(g) * u: SiLU or tanh-approximated GELU, in float64 as kinetic_cpu computes them
extern "C" __global__ void gate(const float* __restrict__ g, const float* __restrict__ u, float* __restrict__ out,
                                long total, int gelu) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    double x = g[i], a;
    if (gelu) a = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    else a = x / (1.0 + exp(-x));
    out[i] = (float)(a * (double)u[i]);
}

extern "C" __global__ void add(float* __restrict__ x, const float* __restrict__ y, long total) {  // x += y
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) x[i] = __fadd_rn(x[i], y[i]);
}

// out[i] = row tokens[i] of the embedding E [n_vocab, row_bytes] * scale; a thread per chunk of 32
template <class T>
__device__ void embed_q(const u8* __restrict__ E, long row_bytes, const int* __restrict__ tokens, float* __restrict__ out,
                        int chunks, float scale) {
    int i = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= chunks) return;
    const u8* row = E + (long)tokens[i] * row_bytes;
    Chunk ch;
    T::load(row + (long)(c / T::CHUNKS) * T::BYTES, c % T::CHUNKS, ch);
    float* o = out + (long)i * chunks * 32 + 32L * c;
    for (int j = 0; j < 32; j++) {
        int q = (signed char)(ch.q[j >> 2] >> (8 * (j & 3)));
        float w = __fadd_rn(__fmul_rn(ch.d, (float)((j < 16 ? ch.sa : ch.sb) * q)), ch.m);
        o[j] = __fmul_rn(w, scale);
    }
}

template <class T>
__device__ void embed_f(const u8* __restrict__ E, long row_bytes, const int* __restrict__ tokens, float* __restrict__ out,
                        int chunks, float scale) {
    int i = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= chunks) return;
    const u8* row = E + (long)tokens[i] * row_bytes;
    for (int j = 0; j < 32; j++) out[(long)i * chunks * 32 + 32L * c + j] = __fmul_rn(T::at(row, 32L * c + j), scale);
}

#define EMBED(KIND, T)                                                                                        \
    extern "C" __global__ void embed_##T(const u8* E, long row_bytes, const int* tokens, float* out, int chunks, \
                                         float scale) {                                                       \
        embed_##KIND<T>(E, row_bytes, tokens, out, chunks, scale);                                            \
    }

EMBED(q, Q8_0)
EMBED(q, Q4_0)
EMBED(q, Q4_1)
EMBED(q, Q5_0)
EMBED(q, Q5_1)
EMBED(q, Q4_K)
EMBED(q, Q5_K)
EMBED(q, Q6_K)
EMBED(f, F32)
EMBED(f, F16)
EMBED(f, BF16)
