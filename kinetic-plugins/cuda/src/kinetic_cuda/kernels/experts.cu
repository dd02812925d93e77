// A mixture of experts' routing and weighted sum (docs/experts.md), each row on its own.

#define MAX_EXPERTS 512  // support.MAX_EXPERTS: the experts a row's taken-set holds

// Row r's experts, as kinetic.experts.route picks them: p = softmax or sigmoid of its router logits (in place),
// the n_used largest p + bias in rank order (ties to the lower id), their p divided by max(sum, 2^-14) when
// normalize, times scale. A thread per row.
extern "C" __global__ void route(float* __restrict__ p, int n, int n_expert, const float* __restrict__ bias, int n_used,
                                 int sigmoid_gating, int normalize, float scale, int* __restrict__ ids,
                                 float* __restrict__ weights) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    float* row = p + (long)r * n_expert;
    if (sigmoid_gating) {
        for (int e = 0; e < n_expert; e++) row[e] = (float)(0.5 * (1.0 + tanh((double)row[e] / 2)));
    } else {
        float top = row[0];
        for (int e = 1; e < n_expert; e++) top = fmaxf(top, row[e]);
        double sum = 0.0;
        for (int e = 0; e < n_expert; e++) {
            row[e] = expf(__fsub_rn(row[e], top));
            sum += row[e];
        }
        float inverse = (float)(1.0 / sum);
        for (int e = 0; e < n_expert; e++) row[e] = __fmul_rn(row[e], inverse);
    }
    unsigned taken[MAX_EXPERTS / 32] = {0};
    float total = 0.f;
    for (int k = 0; k < n_used; k++) {
        int best = -1;
        float best_score = 0.f;
        for (int e = 0; e < n_expert; e++) {
            float score = bias ? __fadd_rn(row[e], bias[e]) : row[e];
            if (!(taken[e / 32] >> (e % 32) & 1u) && (best < 0 || score > best_score)) best = e, best_score = score;
        }
        taken[best / 32] |= 1u << (best % 32);
        ids[r * n_used + k] = best;
        weights[r * n_used + k] = row[best];
        total = __fadd_rn(total, row[best]);
    }
    float divisor = normalize ? fmaxf(total, 6.103515625e-5f) : 1.f;
    for (int k = 0; k < n_used; k++) {
        float w = weights[r * n_used + k];
        if (normalize) w = __fdiv_rn(w, divisor);
        if (scale != 1.f) w = __fmul_rn(w, scale);
        weights[r * n_used + k] = w;
    }
}

// out[t] = ((w_0 y_0 + w_1 y_1) + ...) in rank order, then + shared[t] (out's own values) * sigmoid(g[t]) where
// shared (g) is given: y [n * n_used, width], weights [n * n_used]; a thread per output value
extern "C" __global__ void combine_experts(const float* __restrict__ y, const float* __restrict__ weights, int n_used,
                                           int width, long total, int shared, const float* __restrict__ g,
                                           float* __restrict__ out) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long t = i / width, j = i % width;
    float sum = 0.f;
    for (int k = 0; k < n_used; k++) {
        float v = __fmul_rn(y[(t * n_used + k) * width + j], weights[t * n_used + k]);
        sum = k ? __fadd_rn(sum, v) : v;
    }
    if (shared) {
        float s = out[i];
        if (g) s = __fmul_rn(s, (float)(0.5 * (1.0 + tanh((double)g[t] / 2))));
        sum = __fadd_rn(sum, s);
    }
    out[i] = sum;
}
