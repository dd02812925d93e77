// The recurrent mixers (contracts.blocks.Mamba2, GatedDeltaNet; docs/recurrent.md) and Qwen3.5's gated
// attention: each output element by one fixed sequence of operations, in float64 where kinetic_cpu's kernels
// use it, whatever the batch.

// kept[positions[r]] = x[r * stride + c], c < channels: a pass's convolution inputs kept by position, a thread a value
extern "C" __global__ void conv_keep(const float* __restrict__ x, long stride, const int* __restrict__ positions,
                                     long total, int channels, float* __restrict__ kept) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long row = i / channels, c = i % channels;
    kept[(long)positions[row] * channels + c] = x[row * stride + c];
}

// out[r, c] = silu(causal_conv at p = positions[r] (elementwise.cu) (+ bias[c])): the bias added in float32, silu
// in float64; a thread a value
extern "C" __global__ void conv_silu(const int* __restrict__ positions, long total, int channels,
                                     const float* __restrict__ kept, const float* __restrict__ weights, int width,
                                     const float* __restrict__ bias, float* __restrict__ out) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long row = i / channels, ch = i % channels;
    float v = (float)causal_conv(kept, channels, ch, positions[row], weights, width);
    if (bias) v = __fadd_rn(v, bias[ch]);
    double x = v;
    out[i] = (float)(x / (1.0 + exp(-x)));
}

// The float64 sum of x[s] y[s] in 4 interleaved partial sums, then those pairwise (kinetic_cpu ssm_scan.dot)
__device__ __forceinline__ double dot4(const float* __restrict__ x, const float* __restrict__ y, int n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int whole = n / 4 * 4;
    for (int s = 0; s < whole; s += 4) {
        s0 = __dadd_rn(s0, __dmul_rn((double)x[s], (double)y[s]));
        s1 = __dadd_rn(s1, __dmul_rn((double)x[s + 1], (double)y[s + 1]));
        s2 = __dadd_rn(s2, __dmul_rn((double)x[s + 2], (double)y[s + 2]));
        s3 = __dadd_rn(s3, __dmul_rn((double)x[s + 3], (double)y[s + 3]));
    }
    for (int s = whole; s < n; s++) s0 = __dadd_rn(s0, __dmul_rn((double)x[s], (double)y[s]));
    return __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
}

__device__ __forceinline__ double softplus(double t) { return t > 20.0 ? t : log1p(exp(t)); }  // as ggml cuts it

// Mamba-2's scan (kinetic_cpu kernels/ssm_scan.py): n rows in order from state_in into state_out
// ([n_head, head_dim, d_state] float32), a thread block per head, a thread per state row p. v: [n, v_stride]
// (u, B, C after the convolution), dt: [n, dt_stride] (the first n_head), y: [n, n_head * head_dim]
extern "C" __global__ void ssm_scan(const float* __restrict__ v, long v_stride, const float* __restrict__ dt,
                                    long dt_stride, const float* __restrict__ dt_bias, const float* __restrict__ a,
                                    const float* __restrict__ d, const float* state_in, float* state_out,
                                    float* __restrict__ y, int n, int n_head, int d_state, int n_group) {
    int h = blockIdx.x, p = threadIdx.x, head_dim = blockDim.x;
    long d_inner = (long)n_head * head_dim, g = h / (n_head / n_group);
    long b_at = d_inner + g * d_state, c_at = d_inner + (n_group + g) * d_state;
    long at = ((long)h * head_dim + p) * d_state;
    for (int i = 0; i < n; i++) {
        const float* before = (i == 0 ? state_in : state_out) + at;  // the same row after the first
        float* after = state_out + at;
        const float* row = v + i * v_stride;
        double t = softplus(__dadd_rn((double)dt[i * dt_stride + h], (double)dt_bias[h]));
        double decay = exp(__dmul_rn(t, (double)a[h]));
        double u = row[h * head_dim + p], tu = __dmul_rn(t, u);
        for (int s = 0; s < d_state; s++)
            after[s] = (float)__dadd_rn(__dmul_rn((double)before[s], decay), __dmul_rn(tu, (double)row[b_at + s]));
        double skip = __dmul_rn((double)d[h], u);
        y[i * d_inner + h * head_dim + p] = (float)__dadd_rn(dot4(after, row + c_at, d_state), skip);
    }
}

// Gated DeltaNet's scan (kinetic_cpu kernels/delta_net.py): n rows in order from state_in into state_out
// ([n_head, head_dim, head_dim] float32, rows by value dimension), a thread block per value head h, reading key
// head h mod n_k_head, a thread per state row j. qk: [n, 2 n_k_head, head_dim] (q's heads then k's, l2-normed);
// v: [n, v_stride] (the heads at the start); beta, alpha: [n, ba_stride] (the first n_head of each);
// o: [n, n_head, head_dim]
extern "C" __global__ void delta_net_scan(const float* __restrict__ qk, const float* __restrict__ v, long v_stride,
                                          const float* __restrict__ beta, const float* __restrict__ alpha,
                                          long ba_stride, const float* __restrict__ dt_bias,
                                          const float* __restrict__ a, const float* state_in, float* state_out,
                                          float* __restrict__ o, int n, int n_head, int n_k_head) {
    int h = blockIdx.x, j = threadIdx.x, head_dim = blockDim.x, kh = h % n_k_head;
    long at = ((long)h * head_dim + j) * head_dim;
    double scale = 1.0 / sqrt((double)head_dim);
    for (int i = 0; i < n; i++) {
        const float* before = (i == 0 ? state_in : state_out) + at;  // the same row after the first
        float* after = state_out + at;
        const float* q = qk + ((long)i * 2 * n_k_head + kh) * head_dim;
        const float* k = qk + ((long)i * 2 * n_k_head + n_k_head + kh) * head_dim;
        double t = softplus((double)__fadd_rn(alpha[i * ba_stride + h], dt_bias[h]));
        double decay = exp(__dmul_rn(t, (double)a[h]));
        double b = 1.0 / (1.0 + exp(-(double)beta[i * ba_stride + h]));
        double seen = __dmul_rn(decay, dot4(before, k, head_dim));
        double delta = __dmul_rn(b, __dsub_rn((double)v[i * v_stride + h * head_dim + j], seen));
        for (int s = 0; s < head_dim; s++)
            after[s] = (float)__dadd_rn(__dmul_rn((double)before[s], decay), __dmul_rn(delta, (double)k[s]));
        o[((long)i * n_head + h) * head_dim + j] = (float)__dmul_rn(dot4(after, q, head_dim), scale);
    }
}

// Qwen3.5's q projection [n, n_head, 2, head_dim] (each head's queries, then its gate) into q and gate
// ([n, n_head * head_dim] each); a thread a value
extern "C" __global__ void split_gate(const float* __restrict__ qg, long total, int head_dim, float* __restrict__ q,
                                      float* __restrict__ gate) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long at = i / head_dim * 2 * head_dim + i % head_dim;
    q[i] = qg[at];
    gate[i] = qg[at + head_dim];
}

// x *= sigmoid(g), the sigmoid in float64 (as tanh) rounded once, then the float32 product (kinetic_cpu's
// ops.sigmoid); with q non-NULL the result is also quantized (quantize_q8)
extern "C" __global__ void sigmoid_mul(float* __restrict__ x, const float* __restrict__ g, long total,
                                       signed char* __restrict__ q, float* __restrict__ d, int* __restrict__ sums) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    float s = (float)(0.5 * (1.0 + tanh((double)g[i] / 2.0)));
    float v = __fmul_rn(x[i], s);
    x[i] = v;
    if (q) quantize_warp(v, q + (i & ~31L), d + i / 32, sums + i / 32);
}

// x[i] *= w[i % width]
extern "C" __global__ void mul_rows(float* __restrict__ x, const float* __restrict__ w, long total, int width) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) x[i] = __fmul_rn(x[i], w[i % width]);
}

// x[r, c] = silu(z[r * z_stride + c]) * x[r, c] for c < width, in float64 rounded once (the gate kernel's silu)
extern "C" __global__ void silu_gate_rows(float* __restrict__ x, const float* __restrict__ z, long z_stride, long total,
                                          int width) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    double g = z[i / width * z_stride + i % width];
    x[i] = (float)(g / (1.0 + exp(-g)) * (double)x[i]);
}
