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

__device__ __forceinline__ double softplus(double t) { return t > 20.0 ? t : log1p(exp(t)); }  // as ggml cuts it

// The scans keep a state row in a warp's registers from the first row of the pass to the last: lane l holds the
// row's columns l, l + 32, ... (STATE_HELD of them at most), and a row's dot products are each lane's float64 sum
// of its columns in order, then the warp's butterfly, the same order for any batch.
#define STATE_HELD 8  // support.MAX_STATE_WIDTH / 32

__device__ __forceinline__ double warp_sum(double s) {
    for (int offset = 16; offset > 0; offset >>= 1) s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    return s;
}

__device__ __forceinline__ void load_row(const float* __restrict__ row, int width, int lane, float* held) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) held[k] = row[lane + 32 * k];
}

__device__ __forceinline__ void store_row(float* __restrict__ row, int width, int lane, const float* held) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) row[lane + 32 * k] = held[k];
}

// The lane's part of sum_s held[s] x[s]
__device__ __forceinline__ double lane_dot(const float* held, const float* __restrict__ x, int width, int lane) {
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) s = __dadd_rn(s, __dmul_rn((double)held[k], (double)x[lane + 32 * k]));
    return s;
}

// held[s] = held[s] decay + by x[s], rounded to float32 as the state is kept
__device__ __forceinline__ void decay_add(float* held, double decay, double by, const float* __restrict__ x,
                                          int width, int lane) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width)
            held[k] = (float)__dadd_rn(__dmul_rn((double)held[k], decay), __dmul_rn(by, (double)x[lane + 32 * k]));
}

// Mamba-2's scan (kinetic_cpu kernels/ssm_scan.py): n rows in order from state_in into state_out
// ([n_head, head_dim, d_state] float32), a warp per state row (h, p) of the n_head * head_dim. v: [n, v_stride]
// (u, B, C after the convolution), dt: [n, dt_stride] (the first n_head), y: [n, n_head * head_dim]
extern "C" __global__ void ssm_scan(const float* __restrict__ v, long v_stride, const float* __restrict__ dt,
                                    long dt_stride, const float* __restrict__ dt_bias, const float* __restrict__ a,
                                    const float* __restrict__ d, const float* state_in, float* state_out,
                                    float* __restrict__ y, int n, int n_head, int head_dim, int d_state, int n_group) {
    long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= (long)n_head * head_dim) return;
    int h = warp / head_dim, p = warp % head_dim;
    long d_inner = (long)n_head * head_dim, g = h / (n_head / n_group);
    long b_at = d_inner + g * d_state, c_at = d_inner + (n_group + g) * d_state, at = warp * d_state;
    float held[STATE_HELD];
    load_row(state_in + at, d_state, lane, held);
    for (int i = 0; i < n; i++) {
        const float* row = v + i * v_stride;
        double t = softplus(__dadd_rn((double)dt[i * dt_stride + h], (double)dt_bias[h]));
        double u = row[h * head_dim + p];
        decay_add(held, exp(__dmul_rn(t, (double)a[h])), __dmul_rn(t, u), row + b_at, d_state, lane);
        double out = warp_sum(lane_dot(held, row + c_at, d_state, lane));
        if (lane == 0) y[i * d_inner + warp] = (float)__dadd_rn(out, __dmul_rn((double)d[h], u));
    }
    store_row(state_out + at, d_state, lane, held);
}

// Gated DeltaNet's scan (kinetic_cpu kernels/delta_net.py): n rows in order from state_in into state_out
// ([n_head, head_dim, head_dim] float32, rows by value dimension), a warp per state row (h, j) of the
// n_head * head_dim, value head h reading key head h mod n_k_head. qk: [n, 2 n_k_head, head_dim] (q's heads then
// k's, l2-normed); v: [n, v_stride] (the heads at the start); beta, alpha: [n, ba_stride] (the first n_head of
// each); o: [n, n_head, head_dim]
extern "C" __global__ void delta_net_scan(const float* __restrict__ qk, const float* __restrict__ v, long v_stride,
                                          const float* __restrict__ beta, const float* __restrict__ alpha,
                                          long ba_stride, const float* __restrict__ dt_bias,
                                          const float* __restrict__ a, const float* state_in, float* state_out,
                                          float* __restrict__ o, int n, int n_head, int head_dim, int n_k_head) {
    long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= (long)n_head * head_dim) return;
    int h = warp / head_dim, j = warp % head_dim, kh = h % n_k_head;
    long at = warp * head_dim;
    double scale = 1.0 / sqrt((double)head_dim);
    float held[STATE_HELD];
    load_row(state_in + at, head_dim, lane, held);
    for (int i = 0; i < n; i++) {
        const float* q = qk + ((long)i * 2 * n_k_head + kh) * head_dim;
        const float* k = qk + ((long)i * 2 * n_k_head + n_k_head + kh) * head_dim;
        double t = softplus((double)__fadd_rn(alpha[i * ba_stride + h], dt_bias[h]));
        double decay = exp(__dmul_rn(t, (double)a[h]));
        double b = 1.0 / (1.0 + exp(-(double)beta[i * ba_stride + h]));
        double seen = __dmul_rn(decay, warp_sum(lane_dot(held, k, head_dim, lane)));
        double delta = __dmul_rn(b, __dsub_rn((double)v[i * v_stride + h * head_dim + j], seen));
        decay_add(held, decay, delta, k, head_dim, lane);
        double out = warp_sum(lane_dot(held, q, head_dim, lane));
        if (lane == 0) o[(long)i * n_head * head_dim + warp] = (float)__dmul_rn(out, scale);
    }
    store_row(state_out + at, head_dim, lane, held);
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
