// Grouped-query attention over the float16 KV cache (rope_store fills it).

#define ATTENTION_THREADS 256
#define WARPS (ATTENTION_THREADS / 32)
#define HEAD_LANES 8  // head dims a lane holds: heads of up to 256 (support.MAX_HEAD_DIM)

__device__ float block_reduce(float v, float* shared, int is_max) {  // one fixed tree over the block
    int tid = threadIdx.x;
    shared[tid] = v;
    __syncthreads();
    for (int step = ATTENTION_THREADS / 2; step > 0; step >>= 1) {
        if (tid < step) shared[tid] = is_max ? fmaxf(shared[tid], shared[tid + step]) : __fadd_rn(shared[tid], shared[tid + step]);
        __syncthreads();
    }
    float result = shared[0];
    __syncthreads();
    return result;
}

// Row i, query head h (a block each) attends to cache positions [max(0, p - window + 1), p], p = positions[i]
// (window 0: no window). q: [n, n_head, head_dim] float32, rounded to f16 as it meets the f16 keys; keys,
// values: [ctx, n_head_kv, head_dim] f16; scores: [n, n_head, ctx] scratch; out: [n, n_head * head_dim],
// also quantized (quantize_q8) with xq non-NULL, where head_dim is whole blocks of 32.
// A score is its head_dim products in order; softmax sums and the weighted sum of values go in a fixed
// split of the positions over threads, so a row's output depends only on its position and the cache.
extern "C" __global__ void attention(const float* __restrict__ q, const u16* __restrict__ keys,
                                     const u16* __restrict__ values, const int* __restrict__ positions,
                                     float* __restrict__ scores, float* __restrict__ out, int n_head, int n_head_kv,
                                     int head_dim, float scale, int window, int ctx, signed char* __restrict__ xq,
                                     float* __restrict__ xd, int* __restrict__ xs) {
    __shared__ float qs[ATTENTION_THREADS];
    __shared__ float shared[ATTENTION_THREADS];
    __shared__ float sums[WARPS][32 * HEAD_LANES];
    int i = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
    int kv = h / (n_head / n_head_kv);
    long head = (long)i * n_head + h;
    for (int j = tid; j < head_dim; j += ATTENTION_THREADS) qs[j] = h2f(f2h(q[head * head_dim + j]));
    __syncthreads();
    int last = positions[i];
    int first = window > 0 ? max(0, last - window + 1) : 0;
    int length = last - first + 1;
    float* sc = scores + head * ctx;
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
    peak = block_reduce(peak, shared, 1);
    float total = 0.f;
    for (int t = tid; t < length; t += ATTENTION_THREADS) {
        float e = expf(__fsub_rn(sc[t], peak));
        sc[t] = e;
        total = __fadd_rn(total, e);
    }
    total = block_reduce(total, shared, 0);  // its barriers also publish sc to the whole block
    // warp w sums positions w, w + WARPS, ... in order, lane l dims l, l + 32, ...; then the warps' sums in order
    int warp = tid >> 5, lane = tid & 31;
    float acc[HEAD_LANES] = {};
#pragma unroll 4
    for (int t = warp; t < length; t += WARPS) {  // unrolled: the loads of four positions in flight at once
        float p = sc[t];
        const u16* vr = v0 + t * stride + lane;
#pragma unroll
        for (int m = 0; m < HEAD_LANES; m++)
            if (lane + 32 * m < head_dim) acc[m] = __fmaf_rn(p, h2f(vr[32 * m]), acc[m]);
    }
#pragma unroll
    for (int m = 0; m < HEAD_LANES; m++)
        if (lane + 32 * m < head_dim) sums[warp][lane + 32 * m] = acc[m];
    __syncthreads();
    if (tid < head_dim) {
        float o = sums[0][tid];
        for (int w = 1; w < WARPS; w++) o = __fadd_rn(o, sums[w][tid]);
        long at = head * head_dim + tid;
        o = __fdiv_rn(o, total);
        out[at] = o;
        if (xq) quantize_warp(o, xq + (at & ~31L), xd + at / 32, xs + at / 32);
    }
}
