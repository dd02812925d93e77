// RMS norm and rotary embeddings.

#define NORM_THREADS 256

// out[i] = x[rows ? rows[i] : i] / sqrt(mean(x^2) + eps) * w; x: [*, d] float32. The sum of squares in
// float64: each thread's elements in order, a butterfly over each warp (both lanes of a pair add the same
// two numbers, so every lane holds the same sum), then the 8 warps' sums in order. With q non-NULL the row
// is also quantized (quantize_q8), for the matrices that take it.
extern "C" __global__ void __launch_bounds__(NORM_THREADS) rms_norm(
    const float* x, const int* __restrict__ rows, const float* __restrict__ w, float* out, int d, float eps,
    signed char* __restrict__ q, float* __restrict__ qd, int* __restrict__ sums) {
    __shared__ double part[NORM_THREADS / 32];
    int i = blockIdx.x, tid = threadIdx.x;
    const float* v = x + (long)(rows ? rows[i] : i) * d;
    double s = 0.0;
    for (int j = tid; j < d; j += NORM_THREADS) s = __dadd_rn(s, __dmul_rn((double)v[j], (double)v[j]));
    for (int offset = 16; offset > 0; offset >>= 1) s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    if ((tid & 31) == 0) part[tid >> 5] = s;
    __syncthreads();
    double total = part[0];
    for (int k = 1; k < NORM_THREADS / 32; k++) total = __dadd_rn(total, part[k]);
    float scale = (float)(1.0 / sqrt(total / d + (double)eps));
    for (int j = tid; j < d; j += NORM_THREADS) {  // with q, d is whole blocks: a warp's 32 values are one
        float o = __fmul_rn(__fmul_rn(v[j], scale), w[j]);
        long at = (long)i * d + j;
        out[at] = o;
        if (q) quantize_warp(o, q + (at & ~31L), qd + at / 32, sums + at / 32);
    }
}

// q: [n, n_head, head_dim] and k: [n, n_head_kv, head_dim] float32, in place: pairs of the first n_dims of each
// head rotated by the angle of their position and pair, whose cos and sin ([context, n_dims / 2] float64,
// made by the host in float64) are looked up; adjacent pairs (2k, 2k + 1), or with neox (k, k + n_dims / 2)
extern "C" __global__ void rope(float* __restrict__ q, float* __restrict__ k, const int* __restrict__ positions, int n,
                                int n_head, int n_head_kv, int head_dim, int n_dims, const double* __restrict__ cosines,
                                const double* __restrict__ sines, int neox) {
    int half = n_dims / 2, heads = n_head + n_head_kv;
    long job = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (job >= (long)n * heads * half) return;
    int pair = job % half, h = (job / half) % heads, i = job / half / heads;
    float* v = h < n_head ? q + ((long)i * n_head + h) * head_dim : k + ((long)i * n_head_kv + h - n_head) * head_dim;
    long at = (long)positions[i] * half + pair;
    double c = cosines[at], s = sines[at];
    int a = neox ? pair : 2 * pair, b = neox ? pair + half : 2 * pair + 1;
    double x0 = v[a], x1 = v[b];
    v[a] = (float)(x0 * c - x1 * s);
    v[b] = (float)(x0 * s + x1 * c);
}
