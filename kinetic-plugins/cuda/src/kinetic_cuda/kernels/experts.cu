// A mixture of experts' routing and weighted sum (docs/experts.md), each row on its own.

#define MAX_EXPERTS 512  // support.MAX_EXPERTS: the experts group_pairs counts in shared memory

#define SOFTMAX 0  // ops.GATINGS
#define SIGMOID 1
#define SOFTMAX_WEIGHT 2

// x[:n] = softmax(x[:n]): its exponentials from the largest, summed in float64
__device__ void softmax(float* x, int n) {
    float top = x[0];
    for (int e = 1; e < n; e++) top = fmaxf(top, x[e]);
    double sum = 0.0;
    for (int e = 0; e < n; e++) {
        x[e] = expf(__fsub_rn(x[e], top));
        sum += x[e];
    }
    float inverse = (float)(1.0 / sum);
    for (int e = 0; e < n; e++) x[e] = __fmul_rn(x[e], inverse);
}

// The warp's sum of each lane's s, the same bits in every lane: a fixed butterfly (a + b and b + a are one number)
__device__ double warp_sum(double s) {
    for (int offset = 16; offset > 0; offset >>= 1) s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    return s;
}

// x[:n] = softmax(x[:n]) by one warp, lane l taking experts l, l + 32, ...: its exponentials from the largest,
// each lane's summed in float64 in order, then the lanes' sums by warp_sum
__device__ void warp_softmax(float* x, int n, int lane) {
    float top = __int_as_float(0xff800000);  // minus infinity
    for (int e = lane; e < n; e += 32) top = fmaxf(top, x[e]);
    for (int offset = 16; offset > 0; offset >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
    double sum = 0.0;
    for (int e = lane; e < n; e += 32) {
        x[e] = expf(__fsub_rn(x[e], top));
        sum += x[e];
    }
    float inverse = (float)(1.0 / warp_sum(sum));
    for (int e = lane; e < n; e += 32) x[e] = __fmul_rn(x[e], inverse);
}

// The warp's best of each lane's (id, score): the largest score, ties to the lower id, id -1 (none) last; a total
// order, so every lane ends with the same pick whatever the butterfly's order
__device__ int warp_best(int best, float score) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        int other = __shfl_xor_sync(0xffffffffu, best, offset);
        float other_score = __shfl_xor_sync(0xffffffffu, score, offset);
        if (other >= 0 && (best < 0 || other_score > score || (other_score == score && other < best)))
            best = other, score = other_score;
    }
    return best;
}

// Row r's experts, as kinetic.experts.route picks them: p = softmax or sigmoid of its router logits (in place), or
// the logits themselves (softmax_weight), the n_used largest p + bias in rank order (ties to the lower id), their
// p (softmax_weight: the softmax of theirs) divided by max(sum, 2^-14) when normalize, times scale. A warp per row,
// lane l holding experts l + 32 j (bit j of its taken set); ROUTE_ROWS rows a block.
#define ROUTE_ROWS 4  // ops.route
extern "C" __global__ void route(float* __restrict__ p, int n, int n_expert, const float* __restrict__ bias, int n_used,
                                 int gating, int normalize, float scale, int* __restrict__ ids,
                                 float* __restrict__ weights) {
    int r = blockIdx.x * ROUTE_ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= n) return;
    float* row = p + (long)r * n_expert;
    if (gating == SIGMOID) {
        for (int e = lane; e < n_expert; e += 32) row[e] = (float)(0.5 * (1.0 + tanh((double)row[e] / 2)));
    } else if (gating == SOFTMAX) {
        warp_softmax(row, n_expert, lane);
    }
    __syncwarp();
    unsigned taken = 0u;
    for (int k = 0; k < n_used; k++) {
        int best = -1;
        float best_score = 0.f;
        for (int e = lane, j = 0; e < n_expert; e += 32, j++) {
            float score = bias ? __fadd_rn(row[e], bias[e]) : row[e];
            if (!(taken >> j & 1u) && (best < 0 || score > best_score)) best = e, best_score = score;
        }
        best = warp_best(best, best_score);
        if (best % 32 == lane) taken |= 1u << (best / 32);
        if (lane == 0) ids[r * n_used + k] = best, weights[r * n_used + k] = row[best];
    }
    if (lane) return;
    float* w = weights + r * n_used;
    if (gating == SOFTMAX_WEIGHT) softmax(w, n_used);
    float total = 0.f;
    for (int k = 0; k < n_used; k++) total = __fadd_rn(total, w[k]);
    float divisor = normalize ? fmaxf(total, 6.103515625e-5f) : 1.f;
    for (int k = 0; k < n_used; k++) {
        if (normalize) w[k] = __fdiv_rn(w[k], divisor);
        if (scale != 1.f) w[k] = __fmul_rn(w[k], scale);
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

// The (row, rank) pairs grouped by expert for the prompts' products (matmul.cu's mma_experts), pairs whose id is
// negative left out (Flywheel: another batch takes them). order[i] is the pair at grouped position i: each expert's
// pairs together, experts in id order, the pairs of one expert in no set order (a product's bits do not depend on
// where it is computed); token_of[i] = order[i] / tokens_per. tiles: (expert, its first grouped position, its
// count, the tile's first of them) for each tile of up to TILE_PAIRS of an expert's pairs, then (-1, 0, 0, 0) up to
// max_tiles. One thread block.
#define TILE_PAIRS 64  // matmul.cu's MMA_TOKENS
extern "C" __global__ void group_pairs(const int* __restrict__ ids, int pairs, int n_expert, int tokens_per,
                                       int* __restrict__ order, int* __restrict__ token_of, int4* __restrict__ tiles,
                                       int max_tiles) {
    __shared__ int count[MAX_EXPERTS], first[MAX_EXPERTS], first_tile[MAX_EXPERTS], placed[MAX_EXPERTS];
    __shared__ int n_tiles;
    for (int e = threadIdx.x; e < n_expert; e += blockDim.x) count[e] = placed[e] = 0;
    __syncthreads();
    for (int p = threadIdx.x; p < pairs; p += blockDim.x)
        if (ids[p] >= 0) atomicAdd(&count[ids[p]], 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        int at = 0, tile = 0;
        for (int e = 0; e < n_expert; e++) {
            first[e] = at, first_tile[e] = tile;
            at += count[e], tile += (count[e] + TILE_PAIRS - 1) / TILE_PAIRS;
        }
        n_tiles = tile;
    }
    __syncthreads();
    for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
        int e = ids[p];
        if (e < 0) continue;
        int i = first[e] + atomicAdd(&placed[e], 1);
        order[i] = p;
        token_of[i] = p / tokens_per;
    }
    for (int e = threadIdx.x; e < n_expert; e += blockDim.x)
        for (int j = 0; j * TILE_PAIRS < count[e]; j++)
            tiles[first_tile[e] + j] = make_int4(e, first[e], count[e], j * TILE_PAIRS);
    for (int y = n_tiles + threadIdx.x; y < max_tiles; y += blockDim.x) tiles[y] = make_int4(-1, 0, 0, 0);
}
