// Grouped-query attention over the KV cache (rope_store and store_q8 fill it): keys and values each float16, or
// q8_0 (key_q8, value_q8): the int8 quants [ctx, width], then from byte `plane` = ctx * width on each 32 quants'
// float16 scale d. A q8_0 value d * q has at most 19 significant bits, exact in float32, so either type goes
// through the same sums in the same order.

#define ATTENTION_THREADS 256
#define WARPS (ATTENTION_THREADS / 32)
// P: pairs of head dims a lane holds, 1, 2 or 4: heads of up to 64, 128 or 256 (support.MAX_HEAD_DIM)
#define SHARED_SCORES 4096  // rows whose scores (of all the block's heads) fit keep them in shared memory

// one fixed order over the block: a butterfly in each warp (both lanes of a pair combine the same two numbers,
// so every lane holds the same result), then the warps' results in order
__device__ float block_reduce(float v, float* warps, int is_max) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, offset);
        v = is_max ? fmaxf(v, other) : __fadd_rn(v, other);
    }
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
    __syncthreads();
    float result = warps[0];
    for (int w = 1; w < WARPS; w++) result = is_max ? fmaxf(result, warps[w]) : __fadd_rn(result, warps[w]);
    __syncthreads();
    return result;
}

// 8 cache values from element `at` (a multiple of 8) of a float16 or (q8) a q8_0 cache
__device__ __forceinline__ void cache8(const void* cache, long at, long plane, int q8, float (&x)[8]) {
    if (q8) {
        uint2 w = *(const uint2*)((const signed char*)cache + at);
        float d = h2f(((const u16*)((const u8*)cache + plane))[at / 32]);
        u32 words[2] = {w.x, w.y};
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = __fmul_rn(d, (float)(signed char)(words[e / 4] >> (8 * (e % 4))));
    } else {
        uint4 w = *(const uint4*)((const u16*)cache + at);
        u32 pairs[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int e = 0; e < 4; e++) x[2 * e] = h2f((u16)(pairs[e] & 0xFFFF)), x[2 * e + 1] = h2f((u16)(pairs[e] >> 16));
    }
}

// 2 cache values from element `at` (even), as cache8
__device__ __forceinline__ float2 cache2(const void* cache, long at, long plane, int q8) {
    if (q8) {
        u16 pair = *(const u16*)((const signed char*)cache + at);
        float d = h2f(((const u16*)((const u8*)cache + plane))[at / 32]);
        return make_float2(__fmul_rn(d, (float)(signed char)(pair & 0xFF)), __fmul_rn(d, (float)(signed char)(pair >> 8)));
    }
    u32 pair = *(const u32*)((const u16*)cache + at);
    return make_float2(h2f((u16)(pair & 0xFFFF)), h2f((u16)(pair >> 16)));
}

// acc[g] += each of this warp's positions t = warp, warp + WARPS, ... in order: head g's exponential p_g[t] (at
// sc + g * sc_stride) times the values of t (from element v0 of the cache values); each value row read once for
// all G heads. U positions' values and exponentials are loaded before any of their products, so U loads are in
// flight at once; a lane past the head's dims loads its last pair and keeps none of it.
template <int G, int P>
__device__ __forceinline__ void weigh_values(const float* sc, long sc_stride, const void* __restrict__ values, long v0,
                                             long plane, int q8, long stride, int length, int head_dim, int warp,
                                             int lane, float2 (&acc)[G][P]) {
    constexpr int U = G * P == 1 ? 16 : (G * P == 2 ? 8 : 4);  // as many as registers allow
    int dims[P];
#pragma unroll
    for (int m = 0; m < P; m++) dims[m] = min(64 * m + 2 * lane, head_dim - 2);
    for (int t0 = warp; t0 < length; t0 += U * WARPS) {
        float2 pairs[U][P];
        float p[U][G];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int t = min(t0 + u * WARPS, length - 1);  // a position past the end is loaded, never used
            long row = v0 + t * stride;
#pragma unroll
            for (int g = 0; g < G; g++) p[u][g] = sc[g * sc_stride + t];
#pragma unroll
            for (int m = 0; m < P; m++) pairs[u][m] = cache2(values, row + dims[m], plane, q8);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (t0 + u * WARPS >= length) break;
#pragma unroll
            for (int m = 0; m < P; m++) {
                if (64 * m + 2 * lane < head_dim) {
#pragma unroll
                    for (int g = 0; g < G; g++) {
                        acc[g][m].x = __fmaf_rn(p[u][g], pairs[u][m].x, acc[g][m].x);
                        acc[g][m].y = __fmaf_rn(p[u][g], pairs[u][m].y, acc[g][m].y);
                    }
                }
            }
        }
    }
}

// Row i, query heads h0 .. h0 + G - 1 of one KV head (a block), attend to cache positions
// [max(0, p - window + 1), p], p = positions[i] (window 0: no window). q: [n, n_head, head_dim] float32, rounded
// to f16 as it meets the keys; keys, values: [ctx, n_head_kv, head_dim] f16 or q8_0; scores: [n, n_head, ctx]
// scratch, for rows whose scores do not fit SHARED_SCORES; out: [n, n_head * head_dim], also quantized
// (quantize_q8) with xq non-NULL, where head_dim is whole blocks of 32; sinks, where given: a logit per head that
// joins its softmax's sum as e^(sink - peak) (docs/experts.md, gpt-oss).
// A score is its head_dim products in order; position t's score and exponential belong to thread t % 256, whose
// sum of exponentials runs in order before the block's fixed reduction; a head's weighted sum of values is
// warp w's sum of positions w, w + WARPS, ... in order, then the warps' sums in order. So a row's output
// depends only on its position and the cache: not on the batch, nor on G, which only shares the keys and
// values a block reads among its heads.
template <int G, int P>
__device__ void attend(const float* __restrict__ q, const void* __restrict__ keys, const void* __restrict__ values,
                       const int* __restrict__ positions, float* __restrict__ scores, float* __restrict__ out,
                       int n_head, int n_head_kv, int head_dim, float scale, int window, int ctx,
                       signed char* __restrict__ xq, float* __restrict__ xd, int* __restrict__ xs, int key_q8,
                       int value_q8, const float* __restrict__ sinks) {
    __shared__ float qs[G * 256];
    __shared__ float warps[WARPS];
    __shared__ float kept[SHARED_SCORES];
    __shared__ float2 sums[WARPS][32 * P];
    int i = blockIdx.x, h0 = blockIdx.y * G, tid = threadIdx.x;
    int kv = h0 / (n_head / n_head_kv);
    long head0 = (long)i * n_head + h0;
    for (int j = tid; j < G * head_dim; j += ATTENTION_THREADS) qs[j] = h2f(f2h(q[head0 * head_dim + j]));
    __syncthreads();
    int last = positions[i];
    int first = window > 0 ? max(0, last - window + 1) : 0;
    int length = last - first + 1;
    bool fits = G * length <= SHARED_SCORES;
    float* sc = fits ? kept : scores + head0 * ctx;  // head g's at sc + g * sc_stride
    long sc_stride = fits ? length : ctx, stride = (long)n_head_kv * head_dim;
    long k0 = (long)first * stride + (long)kv * head_dim, plane = (long)ctx * stride;  // k0: the first key's element
    float peak[G];
    for (int g = 0; g < G; g++) peak[g] = __int_as_float(0xff800000);  // -inf
    for (int t = tid; t < length; t += ATTENTION_THREADS) {
        float s[G] = {};
        for (int j = 0; j < head_dim; j += 8) {  // head_dim % 8 == 0: 8 keys a load
            float k8[8];
            cache8(keys, k0 + t * stride + j, plane, key_q8, k8);
#pragma unroll
            for (int g = 0; g < G; g++)
#pragma unroll
                for (int e = 0; e < 8; e++) s[g] = __fmaf_rn(qs[g * head_dim + j + e], k8[e], s[g]);
        }
#pragma unroll
        for (int g = 0; g < G; g++) {
            s[g] = __fmul_rn(s[g], scale);
            sc[g * sc_stride + t] = s[g];
            peak[g] = fmaxf(peak[g], s[g]);
        }
    }
    float total[G] = {};
#pragma unroll
    for (int g = 0; g < G; g++) peak[g] = block_reduce(peak[g], warps, 1);
    for (int t = tid; t < length; t += ATTENTION_THREADS) {
#pragma unroll
        for (int g = 0; g < G; g++) {
            float e = expf(__fsub_rn(sc[g * sc_stride + t], peak[g]));
            sc[g * sc_stride + t] = e;
            total[g] = __fadd_rn(total[g], e);
        }
    }
#pragma unroll
    for (int g = 0; g < G; g++) {
        total[g] = block_reduce(total[g], warps, 0);  // its barriers also publish sc
        if (sinks) total[g] = __fadd_rn(total[g], expf(__fsub_rn(sinks[h0 + g], peak[g])));
    }
    int warp = tid >> 5, lane = tid & 31;
    float2 acc[G][P] = {};  // head g, lane l: dims 2 l, 2 l + 1, 2 l + 64, ...
    weigh_values<G, P>(sc, sc_stride, values, k0, plane, value_q8, stride, length, head_dim, warp, lane, acc);
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
        for (int m = 0; m < P; m++) sums[warp][32 * m + lane] = acc[g][m];
        __syncthreads();
        if (tid < head_dim) {
            const float* column = (const float*)&sums[0][0] + tid;  // dim tid of each warp's sums
            float o = column[0];
            for (int w = 1; w < WARPS; w++) o = __fadd_rn(o, column[w * 64 * P]);
            long at = (head0 + g) * head_dim + tid;
            o = __fdiv_rn(o, total[g]);
            out[at] = o;
            if (xq) quantize_warp(o, xq + (at & ~31L), xd + at / 32, xs + at / 32);
        }
        __syncthreads();
    }
}

#define ATTENTION(G, P)                                                                                        \
    extern "C" __global__ void __launch_bounds__(ATTENTION_THREADS) attention_##G##_##P(                       \
        const float* q, const void* keys, const void* values, const int* positions, float* scores, float* out, \
        int n_head, int n_head_kv, int head_dim, float scale, int window, int ctx, signed char* xq, float* xd, \
        int* xs, int key_q8, int value_q8, const float* sinks) {                                              \
        attend<G, P>(q, keys, values, positions, scores, out, n_head, n_head_kv, head_dim, scale, window, ctx, \
                     xq, xd, xs, key_q8, value_q8, sinks);                                                    \
    }
#define ATTENTION_PAIRS(G) ATTENTION(G, 1) ATTENTION(G, 2) ATTENTION(G, 4)

ATTENTION_PAIRS(1)
ATTENTION_PAIRS(2)
ATTENTION_PAIRS(3)
ATTENTION_PAIRS(4)
ATTENTION_PAIRS(5)
ATTENTION_PAIRS(6)
ATTENTION_PAIRS(7)
ATTENTION_PAIRS(8)
