// Grouped-query attention over the float16 KV cache (rope_store fills it).

#define ATTENTION_THREADS 256
#define WARPS (ATTENTION_THREADS / 32)
#define HEAD_PAIRS 4  // pairs of head dims a lane holds: heads of up to 256 (support.MAX_HEAD_DIM)
#define SHARED_SCORES 4096  // rows that attend to at most this many positions keep their scores in shared memory

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

// Row i, query head h (a block each) attends to cache positions [max(0, p - window + 1), p], p = positions[i]
// (window 0: no window). q: [n, n_head, head_dim] float32, rounded to f16 as it meets the f16 keys; keys,
// values: [ctx, n_head_kv, head_dim] f16; scores: [n, n_head, ctx] scratch, for rows past SHARED_SCORES
// positions; out: [n, n_head * head_dim], also quantized (quantize_q8) with xq non-NULL, where head_dim is
// whole blocks of 32. A score is its head_dim products in order; softmax sums and the weighted sum of values
// go in a fixed split of the positions over threads, so a row's output depends only on its position and the cache.
extern "C" __global__ void __launch_bounds__(ATTENTION_THREADS) attention(
    const float* __restrict__ q, const u16* __restrict__ keys, const u16* __restrict__ values,
    const int* __restrict__ positions, float* __restrict__ scores, float* __restrict__ out, int n_head, int n_head_kv,
    int head_dim, float scale, int window, int ctx, signed char* __restrict__ xq, float* __restrict__ xd,
    int* __restrict__ xs) {
    __shared__ float qs[ATTENTION_THREADS];
    __shared__ float warps[WARPS];
    __shared__ float kept[SHARED_SCORES];
    __shared__ float2 sums[WARPS][32 * HEAD_PAIRS];
    int i = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
    int kv = h / (n_head / n_head_kv);
    long head = (long)i * n_head + h;
    for (int j = tid; j < head_dim; j += ATTENTION_THREADS) qs[j] = h2f(f2h(q[head * head_dim + j]));
    __syncthreads();
    int last = positions[i];
    int first = window > 0 ? max(0, last - window + 1) : 0;
    int length = last - first + 1;
    float* sc = length <= SHARED_SCORES ? kept : scores + head * ctx;
    long stride = (long)n_head_kv * head_dim;
    const u16* k0 = keys + (long)first * stride + (long)kv * head_dim;
    const u16* v0 = values + (long)first * stride + (long)kv * head_dim;
    float peak = __int_as_float(0xff800000);  // -inf
    for (int t = tid; t < length; t += ATTENTION_THREADS) {
        const uint4* kr = (const uint4*)(k0 + t * stride);  // head_dim % 8 == 0: 8 keys a load
        float s = 0.f;
        for (int j = 0; j < head_dim; j += 8) {
            uint4 w = kr[j / 8];
            u32 pairs[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int i = 0; i < 4; i++) {
                s = __fmaf_rn(qs[j + 2 * i], h2f((u16)(pairs[i] & 0xFFFF)), s);
                s = __fmaf_rn(qs[j + 2 * i + 1], h2f((u16)(pairs[i] >> 16)), s);
            }
        }
        s = __fmul_rn(s, scale);
        sc[t] = s;
        peak = fmaxf(peak, s);
    }
    peak = block_reduce(peak, warps, 1);
    float total = 0.f;
    for (int t = tid; t < length; t += ATTENTION_THREADS) {
        float e = expf(__fsub_rn(sc[t], peak));
        sc[t] = e;
        total = __fadd_rn(total, e);
    }
    total = block_reduce(total, warps, 0);  // its barriers also publish sc to the whole block
    // warp w sums positions w, w + WARPS, ... in order, lane l dims 2 l, 2 l + 1, 2 l + 64, ...; then the warps'
    // sums in order
    int warp = tid >> 5, lane = tid & 31;
    float2 acc[HEAD_PAIRS] = {};
#pragma unroll 8
    for (int t = warp; t < length; t += WARPS) {  // unrolled: the loads of eight positions in flight at once
        float p = sc[t];
        const u32* vr = (const u32*)(v0 + t * stride) + lane;
#pragma unroll
        for (int m = 0; m < HEAD_PAIRS; m++) {
            if (64 * m + 2 * lane < head_dim) {
                u32 pair = vr[32 * m];
                acc[m].x = __fmaf_rn(p, h2f((u16)(pair & 0xFFFF)), acc[m].x);
                acc[m].y = __fmaf_rn(p, h2f((u16)(pair >> 16)), acc[m].y);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < HEAD_PAIRS; m++) sums[warp][32 * m + lane] = acc[m];
    __syncthreads();
    if (tid < head_dim) {
        const float* column = (const float*)&sums[0][0] + tid;  // dim tid of each warp's sums
        float o = column[0];
        for (int w = 1; w < WARPS; w++) o = __fadd_rn(o, column[w * 64 * HEAD_PAIRS]);
        long at = head * head_dim + tid;
        o = __fdiv_rn(o, total);
        out[at] = o;
        if (xq) quantize_warp(o, xq + (at & ~31L), xd + at / 32, xs + at / 32);
    }
}
