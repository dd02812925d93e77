// Activations to int8 blocks, gates, residual adds and the embedding lookup: each output element by one
// fixed sequence of operations.

// A block of 32 floats, one per lane of a whole warp, to int8 q, scale d and sum, as kinetic_cpu's Q8_0:
// d = amax / 127 rounded to f16, q = v * (127 / amax) rounded half to even. The maximum and the integer sum
// are exact in any order.
__device__ __forceinline__ void quantize_warp(float v, signed char* q, float* d, int* sum) {
    int lane = threadIdx.x & 31;
    float amax = fabsf(v);
    for (int offset = 16; offset > 0; offset >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    float inverse = amax != 0.f ? __fdiv_rn(127.f, amax) : 0.f;
    int a = (int)rintf(__fmul_rn(v, inverse)), total = a;
    q[lane] = (signed char)a;
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffffu, total, offset);
    if (lane == 0) {
        *d = h2f(f2h(__fdiv_rn(amax, 127.f)));
        *sum = total;
    }
}

// x: [blocks, 32] float32 -> q [blocks, 32] int8, d [blocks] and sums [blocks]; a thread per value
extern "C" __global__ void quantize_q8(const float* __restrict__ x, long total, signed char* __restrict__ q,
                                       float* __restrict__ d, int* __restrict__ sums) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) quantize_warp(x[i], q + (i & ~31L), d + i / 32, sums + i / 32);  // total: whole warps
}

#define SILU 0  // ops.ACTIVATIONS
#define GELU_TANH 1
#define SWIGLU_OAI 2

// g = act(g) * u: SiLU or tanh-approximated GELU in float64 as kinetic_cpu computes them, or gpt-oss's swiglu_oai
// in float32 (kinetic.experts.swiglu_oai: x = min(g, 7), x * sigmoid(1.702 x) * (clamp(u, -7, 7) + 1)); with q
// non-NULL the result is also quantized (quantize_q8)
extern "C" __global__ void gate(float* __restrict__ g, const float* __restrict__ u, long total, int activation,
                                signed char* __restrict__ q, float* __restrict__ d, int* __restrict__ sums) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    float v;
    if (activation == SWIGLU_OAI) {
        float x = fminf(g[i], 7.f), y = fminf(fmaxf(u[i], -7.f), 7.f);
        v = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.f, expf(__fmul_rn(1.702f, -x)))), __fadd_rn(y, 1.f));
    } else {
        double x = g[i];
        double a = activation == GELU_TANH ? 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                                           : x / (1.0 + exp(-x));
        v = (float)(a * (double)u[i]);
    }
    g[i] = v;
    if (q) quantize_warp(v, q + (i & ~31L), d + i / 32, sums + i / 32);
}

// Rows x [n, width] into a q8_0 cache's rows positions[:n] (attention.cu: quants [ctx, width], then from byte
// `plane` the float16 scales): per 32 values d = amax / 127 and q = round(x * (1 / d)), halves away from zero, as
// ggml's quantize_row_q8_0_ref and kinetic_cpu's cache; a thread per value, width whole warps
extern "C" __global__ void store_q8(const float* __restrict__ x, const int* __restrict__ positions, long total,
                                    int width, signed char* __restrict__ cache, long plane) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long at = (long)positions[i / width] * width + i % width;
    float v = x[i], amax = fabsf(v);
    for (int offset = 16; offset > 0; offset >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    float d = __fdiv_rn(amax, 127.f), inverse = d != 0.f ? __fdiv_rn(1.f, d) : 0.f;
    cache[at] = (signed char)roundf(__fmul_rn(v, inverse));
    if ((threadIdx.x & 31) == 0) ((u16*)(cache + plane))[at / 32] = f2h(d);
}

// Each n values of x (a thread block each, n threads: 64, 128 or 256) times the orthonormal Walsh-Hadamard matrix
// of order n, as kinetic_cpu's ops.rotated: butterflies in float64 in one fixed order, then one rounding
extern "C" __global__ void hadamard(float* __restrict__ x, int n) {
    __shared__ double chunk[256];
    int t = threadIdx.x;
    float* own = x + (long)blockIdx.x * n;
    chunk[t] = own[t];
    __syncthreads();
    for (int half = 1; half < n; half *= 2) {
        double a = chunk[t], b = chunk[t ^ half];
        __syncthreads();
        chunk[t] = (t & half) ? __dsub_rn(b, a) : __dadd_rn(a, b);
        __syncthreads();
    }
    own[t] = (float)__dmul_rn(chunk[t], 1.0 / sqrt((double)n));
}

// x += y * scale, rounded after the product as kinetic_cpu's runner does (a scale of 1 changes no bit)
extern "C" __global__ void add(float* __restrict__ x, const float* __restrict__ y, long total, float scale) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) x[i] = __fadd_rn(x[i], __fmul_rn(y[i], scale));
}

// Rows x [n, width] into a float16 cache's rows positions[:n] (rope_store's layout)
extern "C" __global__ void store_f16(const float* __restrict__ x, const int* __restrict__ positions, long total,
                                     int width, u16* __restrict__ cache) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) cache[(long)positions[i / width] * width + i % width] = f2h(x[i]);
}

// LFM2's short convolution (contracts.blocks.ShortConv), in two launches so that a pass's rows are all kept before
// any is convolved. bcu: [n, 3 * d], each row's b, c, u; kept: [context, d] float32, a row per position.
// short_conv_keep: kept[positions[i]] = b * u, a thread per value
extern "C" __global__ void short_conv_keep(const float* __restrict__ bcu, const int* __restrict__ positions, long total,
                                           int d, float* __restrict__ kept) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long row = i / d, c = i % d;
    kept[(long)positions[row] * d + c] = __fmul_rn(bcu[row * 3 * d + c], bcu[row * 3 * d + 2 * d + c]);
}

// The sum over j of weights[ch, j] * kept[p - width + 1 + j, ch] (kept: [context, d]), positions before 0
// counting as 0: in double, the oldest first, as kinetic_cpu's kernels/short_conv.py
__device__ __forceinline__ double causal_conv(const float* __restrict__ kept, long d, long ch, long p,
                                              const float* __restrict__ weights, int width) {
    long first = p - width + 1;
    double sum = 0.0;
    for (int j = first < 0 ? (int)-first : 0; j < width; j++)
        sum = __dadd_rn(sum, __dmul_rn((double)kept[(first + j) * d + ch], (double)weights[ch * width + j]));
    return sum;
}

// out[i] = c * causal_conv at p = positions[i]; a thread per value
extern "C" __global__ void short_conv(const float* __restrict__ bcu, const int* __restrict__ positions, long total,
                                      int d, const float* __restrict__ kept, const float* __restrict__ weights,
                                      int width, float* __restrict__ out) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long row = i / d, ch = i % d;
    out[i] = __fmul_rn(bcu[row * 3 * d + d + ch], (float)causal_conv(kept, d, ch, positions[row], weights, width));
}

// x *= scale
extern "C" __global__ void scale(float* __restrict__ x, long total, float by) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) x[i] = __fmul_rn(x[i], by);
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
EMBED(q, MXFP4)
EMBED(f, F32)
EMBED(f, F16)
EMBED(f, BF16)
