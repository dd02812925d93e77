// The recurrent mixers (contracts.blocks.Mamba2, GatedDeltaNet; docs/recurrent.md) and Qwen3.5's gated
// attention: each output element by one fixed sequence of operations whatever the batch; the scans' state
// arithmetic in float32, as ggml's kernels and kinetic_cpu's take it.

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

// The scans keep one output's column of a state (kinetic.recurrent.state_shape: [n_head, width, outputs]) in a
// warp's registers from the first row of the pass to the last: lane l holds its values l, l + 32, ...
// (STATE_HELD of them at most), and the column's dot products are each lane's fused multiply-adds over its
// values in order, then the warp's butterfly, the same order for any batch.
#define MAX_STATE_WIDTH 256  // support.MAX_STATE_WIDTH
#define STATE_HELD (MAX_STATE_WIDTH / 32)

__device__ __forceinline__ float warp_sum(float s) {
    for (int offset = 16; offset > 0; offset >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    return s;
}

// column: a state's first value of the column, whose values are `stride` apart
__device__ __forceinline__ void load_column(const float* __restrict__ column, long stride, int width, int lane,
                                            float* held) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) held[k] = column[(lane + 32 * k) * stride];
}

__device__ __forceinline__ void store_column(float* __restrict__ column, long stride, int width, int lane,
                                             const float* held) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) column[(lane + 32 * k) * stride] = held[k];
}

// The lane's part of sum_s held[s] x[s]
__device__ __forceinline__ float lane_dot(const float* held, const float* __restrict__ x, int width, int lane) {
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) s = __fmaf_rn(held[k], x[lane + 32 * k], s);
    return s;
}

// held[s] = held[s] decay + by x[s]
__device__ __forceinline__ void decay_add(float* held, float decay, float by, const float* __restrict__ x,
                                          int width, int lane) {
#pragma unroll
    for (int k = 0; k < STATE_HELD; k++)
        if (lane + 32 * k < width) held[k] = __fmaf_rn(held[k], decay, __fmul_rn(by, x[lane + 32 * k]));
}

// A block's warps are columns of one head (ops.scan_warps), which share the vectors each row reads: the block
// stages SCAN_CHUNK rows of them in shared memory at a time, and lane l computes row first + l's scalars, which
// every lane would otherwise compute again.
#define SCAN_CHUNK 16

// The warp's sum of each of a lane's SCAN_CHUNK (16) values, all at once: lane l ends with the sum of part[l / 2].
// Each sum pairs the lanes as warp_sum does, so it has warp_sum's bits; the rows' butterflies overlap instead of
// following one another.
__device__ __forceinline__ float chunk_sums(float* part, int lane) {
#pragma unroll
    for (int half = SCAN_CHUNK / 2, offset = 16; half >= 1; half /= 2, offset /= 2) {
        bool upper = lane & offset;  // keeps the upper half of the values
#pragma unroll
        for (int m = 0; m < half; m++) {
            float keep = upper ? part[m + half] : part[m], send = upper ? part[m] : part[m + half];
            part[m] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, offset));
        }
    }
    return __fadd_rn(part[0], __shfl_xor_sync(0xffffffffu, part[0], 1));
}

// staged[r][c] = the row first + r's values at `at` (c < width) then at `then` (width more), rows of `stride`
__device__ __forceinline__ void stage(float (*staged)[2 * MAX_STATE_WIDTH], const float* __restrict__ x,
                                      long stride, int first, int count, long at, long then, int width) {
    for (int e = threadIdx.x; e < count * 2 * width; e += blockDim.x) {
        int r = e / (2 * width), c = e % (2 * width);
        staged[r][c] = x[(first + r) * stride + (c < width ? at + c : then + c - width)];
    }
}

// Mamba-2's scan (kinetic_cpu kernels/ssm_scan.py): n rows in order from state_in into state_out
// ([n_head, d_state, head_dim] float32), a warp per column (h, p) of the n_head * head_dim. v: [n, v_stride]
// (u, B, C after the convolution), dt: [n, dt_stride] (the first n_head), y: [n, n_head * head_dim]
extern "C" __global__ void ssm_scan(const float* __restrict__ v, long v_stride, const float* __restrict__ dt,
                                    long dt_stride, const float* __restrict__ dt_bias, const float* __restrict__ a,
                                    const float* __restrict__ d, const float* state_in, float* state_out,
                                    float* __restrict__ y, int n, int n_head, int head_dim, int d_state, int n_group) {
    __shared__ float staged[SCAN_CHUNK][2 * MAX_STATE_WIDTH];  // B then C
    long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32, h = warp / head_dim, p = warp % head_dim;
    long d_inner = (long)n_head * head_dim, g = h / (n_head / n_group);
    long at = (long)h * d_state * head_dim + p;
    float held[STATE_HELD];
    load_column(state_in + at, head_dim, d_state, lane, held);
    for (int first = 0; first < n; first += SCAN_CHUNK) {
        int count = min(SCAN_CHUNK, n - first), mine = first + min(lane, count - 1);
        __syncthreads();  // the last chunk is read
        stage(staged, v, v_stride, first, count, d_inner + g * d_state, d_inner + (n_group + g) * d_state, d_state);
        double t = softplus(__dadd_rn((double)dt[mine * dt_stride + h], (double)dt_bias[h]));
        double u = v[mine * v_stride + h * head_dim + p];
        float decays = (float)exp(__dmul_rn(t, (double)a[h])), tus = (float)__dmul_rn(t, u);
        float skips = (float)__dmul_rn((double)d[h], u);
        __syncthreads();
        float part[SCAN_CHUNK];
#pragma unroll
        for (int r = 0; r < SCAN_CHUNK; r++) {
            float decay = __shfl_sync(0xffffffffu, decays, r), tu = __shfl_sync(0xffffffffu, tus, r);
            if (r < count) decay_add(held, decay, tu, staged[r], d_state, lane);
            part[r] = r < count ? lane_dot(held, staged[r] + d_state, d_state, lane) : 0.f;
        }
        float out = chunk_sums(part, lane), skip = __shfl_sync(0xffffffffu, skips, lane / 2);
        if (lane % 2 == 0 && lane / 2 < count) y[(first + lane / 2) * d_inner + warp] = __fadd_rn(out, skip);
    }
    store_column(state_out + at, head_dim, d_state, lane, held);
}

// Gated DeltaNet's scan (kinetic_cpu kernels/delta_net.py): n rows in order from state_in into state_out
// ([n_head, head_dim (k), head_dim (v)] float32), a warp per column (h, j) of the n_head * head_dim, value head h
// reading key head h mod n_k_head. qk: [n, 2 n_k_head, head_dim] (q's heads then k's, l2-normed); v: [n, v_stride]
// (the heads at the start); beta, alpha: [n, ba_stride] (the first n_head of each); o: [n, n_head, head_dim]
extern "C" __global__ void delta_net_scan(const float* __restrict__ qk, const float* __restrict__ v, long v_stride,
                                          const float* __restrict__ beta, const float* __restrict__ alpha,
                                          long ba_stride, const float* __restrict__ dt_bias,
                                          const float* __restrict__ a, const float* state_in, float* state_out,
                                          float* __restrict__ o, int n, int n_head, int head_dim, int n_k_head) {
    __shared__ float staged[SCAN_CHUNK][2 * MAX_STATE_WIDTH];  // q then k
    long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32, h = warp / head_dim, j = warp % head_dim, kh = h % n_k_head;
    long at = (long)h * head_dim * head_dim + j;
    float scale = (float)(1.0 / sqrt((double)head_dim));
    float held[STATE_HELD];
    load_column(state_in + at, head_dim, head_dim, lane, held);
    for (int first = 0; first < n; first += SCAN_CHUNK) {
        int count = min(SCAN_CHUNK, n - first), mine = first + min(lane, count - 1);
        __syncthreads();  // the last chunk is read
        stage(staged, qk, 2L * n_k_head * head_dim, first, count, (long)kh * head_dim,
              (long)(n_k_head + kh) * head_dim, head_dim);
        double t = softplus((double)__fadd_rn(alpha[mine * ba_stride + h], dt_bias[h]));
        float decays = (float)exp(__dmul_rn(t, (double)a[h]));
        float betas = (float)(1.0 / (1.0 + exp(-(double)beta[mine * ba_stride + h])));
        float values = v[mine * v_stride + h * head_dim + j];
        __syncthreads();
        float part[SCAN_CHUNK];
#pragma unroll
        for (int r = 0; r < SCAN_CHUNK; r++) {
            float decay = __shfl_sync(0xffffffffu, decays, r), b = __shfl_sync(0xffffffffu, betas, r);
            float value = __shfl_sync(0xffffffffu, values, r);
            part[r] = 0.f;
            if (r < count) {  // the same for the whole warp
                float seen = __fmul_rn(decay, warp_sum(lane_dot(held, staged[r] + head_dim, head_dim, lane)));
                decay_add(held, decay, __fmul_rn(b, __fsub_rn(value, seen)), staged[r] + head_dim, head_dim, lane);
                part[r] = lane_dot(held, staged[r], head_dim, lane);
            }
        }
        float out = chunk_sums(part, lane);
        if (lane % 2 == 0 && lane / 2 < count)
            o[(long)(first + lane / 2) * n_head * head_dim + warp] = __fmul_rn(out, scale);
    }
    store_column(state_out + at, head_dim, head_dim, lane, held);
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
