// RMS norm and rotary embeddings.

#define NORM_THREADS 1024  // at most; ops.rms_norm launches a number of threads that depends on d alone
#define NORM_HELD 4  // values (and weights) a thread holds in registers: rows of up to 4 * threads are read once

__device__ __forceinline__ void norm_out(float o, long at, float* out, signed char* q, float* qd, int* sums) {
    out[at] = o;
    if (q) quantize_warp(o, q + (at & ~31L), qd + at / 32, sums + at / 32);
}

// out[i] = x[rows ? rows[i] : i] / sqrt(mean(x^2) + eps) * w; x: [*, d] float32. The sum of squares in
// float64: each thread's elements in order, a butterfly over each warp (both lanes of a pair add the same
// two numbers, so every lane holds the same sum), then the warps' sums in order. With q non-NULL the row
// is also quantized (quantize_q8), for the matrices that take it.
extern "C" __global__ void __launch_bounds__(NORM_THREADS) rms_norm(
    const float* x, const int* __restrict__ rows, const float* __restrict__ w, float* out, int d, float eps,
    signed char* __restrict__ q, float* __restrict__ qd, int* __restrict__ sums) {
    __shared__ double part[NORM_THREADS / 32];
    int i = blockIdx.x, tid = threadIdx.x, threads = blockDim.x;
    const float* v = x + (long)(rows ? rows[i] : i) * d;
    float held[NORM_HELD], weights[NORM_HELD];
#pragma unroll
    for (int k = 0; k < NORM_HELD; k++) {
        int j = tid + k * threads;
        held[k] = j < d ? v[j] : 0.f;
        weights[k] = j < d ? w[j] : 0.f;
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < NORM_HELD; k++)
        if (tid + k * threads < d) s = __dadd_rn(s, __dmul_rn((double)held[k], (double)held[k]));
    for (int j = tid + NORM_HELD * threads; j < d; j += threads) s = __dadd_rn(s, __dmul_rn((double)v[j], (double)v[j]));
    for (int offset = 16; offset > 0; offset >>= 1) s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    if ((tid & 31) == 0) part[tid >> 5] = s;
    __syncthreads();
    double total = part[0];
    for (int k = 1; k < threads / 32; k++) total = __dadd_rn(total, part[k]);
    float scale = (float)(1.0 / sqrt(total / d + (double)eps));
    // with q, d is whole blocks: a warp's 32 values are one
#pragma unroll
    for (int k = 0; k < NORM_HELD; k++) {
        int j = tid + k * threads;
        if (j < d) norm_out(__fmul_rn(__fmul_rn(held[k], scale), weights[k]), (long)i * d + j, out, q, qd, sums);
    }
    for (int j = tid + NORM_HELD * threads; j < d; j += threads)
        norm_out(__fmul_rn(__fmul_rn(v[j], scale), w[j]), (long)i * d + j, out, q, qd, sums);
}

// In place on q: [n, n_head, head_dim], and k: [n, n_head_kv, head_dim] float32 rotated straight into the f16
// cache keys, values: [ctx, n_head_kv * head_dim] at row positions[i], with v: [n, n_head_kv * head_dim]. Pairs
// of the first n_dims of each head turn by the angle of their position and pair, whose cos and sin
// ([context, n_dims / 2] float64, made by the host in float64) are looked up; adjacent pairs (2k, 2k + 1), or
// with neox (k, k + n_dims / 2). A thread per pair, then per key past n_dims, then per value.
extern "C" __global__ void rope_store(float* __restrict__ q, float* __restrict__ k, const float* __restrict__ v,
                                      const int* __restrict__ positions, int n, int n_head, int n_head_kv,
                                      int head_dim, int n_dims, const double* __restrict__ cosines,
                                      const double* __restrict__ sines, int neox, u16* __restrict__ keys,
                                      u16* __restrict__ values, int keep_keys, int keep_values) {
    int half = n_dims / 2, heads = n_head + n_head_kv, width = n_head_kv * head_dim, plain = head_dim - n_dims;
    long job = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long pairs = (long)n * heads * half, unturned = (long)n * n_head_kv * plain;
    if (job < pairs) {
        int pair = job % half, h = (job / half) % heads, i = job / half / heads;
        long at = (long)positions[i] * half + pair;
        double c = cosines[at], s = sines[at];
        int a = neox ? pair : 2 * pair, b = neox ? pair + half : 2 * pair + 1;
        const float* from = h < n_head ? q + ((long)i * n_head + h) * head_dim : k + (long)i * width + (h - n_head) * head_dim;
        double x0 = from[a], x1 = from[b];
        float y0 = (float)(x0 * c - x1 * s), y1 = (float)(x0 * s + x1 * c);
        if (h < n_head || keep_keys) {  // kept keys stay in k, for store_q8 or store_f16
            float* to = h < n_head ? q + ((long)i * n_head + h) * head_dim : k + (long)i * width + (h - n_head) * head_dim;
            to[a] = y0;
            to[b] = y1;
        } else {
            u16* to = keys + (long)positions[i] * width + (h - n_head) * head_dim;
            to[a] = f2h(y0);
            to[b] = f2h(y1);
        }
    } else if (job < pairs + unturned && !keep_keys) {
        job -= pairs;
        int j = job % plain, h = (job / plain) % n_head_kv, i = job / plain / n_head_kv;
        long at = (long)h * head_dim + n_dims + j;
        keys[(long)positions[i] * width + at] = f2h(k[(long)i * width + at]);
    } else if (job >= pairs + unturned && job < pairs + unturned + (long)n * width && !keep_values) {
        job -= pairs + unturned;
        int i = job / width, j = job % width;
        values[(long)positions[i] * width + j] = f2h(v[job]);
    }
}
