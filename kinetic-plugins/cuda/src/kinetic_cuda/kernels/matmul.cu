// out[t, r] = row r of W . token t, for raw GGUF weights W [rows, row_bytes]. One warp per row and up to
// TILE tokens: lane l takes chunks l, l + 32, l + 64, ... in order, then the 32 lanes are added in one
// butterfly. So an output depends on its row, its token and k, never on the batch: every float operation
// is an explicit _rn intrinsic, which the compiler may not fuse or reorder. With accumulate, out += value.

#define TILE 8

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ void finish(float* acc, int lane, int r, int t0, int nt, const float* bias, float* out,
                                       int out_stride, int accumulate) {
    for (int t = 0; t < TILE; t++) {
        float v = warp_sum(acc[t]);
        if (lane == 0 && t < nt) {
            if (bias) v = __fadd_rn(v, bias[r]);
            float* o = out + (long)(t0 + t) * out_stride + r;
            *o = accumulate ? __fadd_rn(*o, v) : v;
        }
    }
}

__device__ __forceinline__ int dot16(const int* q, int4 x) {
    return __dp4a(q[3], x.w, __dp4a(q[2], x.z, __dp4a(q[1], x.y, __dp4a(q[0], x.x, 0))));
}

// xq: [n, 32 chunks] int8, xd and xs: [n, chunks] the blocks' scales and sums (activations.cu)
template <class T>
__device__ void matmul_q(const u8* __restrict__ W, long row_bytes, int rows, int chunks,
                         const signed char* __restrict__ xq, const float* __restrict__ xd, const int* __restrict__ xs,
                         const float* __restrict__ bias, float* out, int n, int out_stride, int accumulate) {
    int lane = threadIdx.x & 31;
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= rows) return;
    int t0 = blockIdx.y * TILE, nt = min(TILE, n - t0);
    float acc[TILE];
    for (int t = 0; t < TILE; t++) acc[t] = 0.f;
    const u8* row = W + (long)r * row_bytes;
    for (int c = lane; c < chunks; c += 32) {
        Chunk ch;
        T::load(row + (long)(c / T::CHUNKS) * T::BYTES, c % T::CHUNKS, ch);
#pragma unroll
        for (int t = 0; t < TILE; t++) {
            if (t < nt) {
                long at = (long)(t0 + t) * chunks + c;
                const int4* x = (const int4*)(xq + 32 * at);
                int exact = ch.sa * dot16(ch.q, x[0]) + ch.sb * dot16(ch.q + 4, x[1]);
                float dx = xd[at];
                float v = __fmul_rn(__fmul_rn(ch.d, dx), (float)exact);
                if (T::HAS_MIN) v = __fadd_rn(v, __fmul_rn(__fmul_rn(ch.m, dx), (float)xs[at]));
                acc[t] = __fadd_rn(acc[t], v);
            }
        }
    }
    finish(acc, lane, r, t0, nt, bias, out, out_stride, accumulate);
}

// x: [n, 32 chunks] float32; a chunk's 32 products are summed in order, then added to the lane's sum
template <class T>
__device__ void matmul_f(const u8* __restrict__ W, long row_bytes, int rows, int chunks, const float* __restrict__ x,
                         const float* __restrict__ bias, float* out, int n, int out_stride, int accumulate) {
    int lane = threadIdx.x & 31;
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= rows) return;
    int t0 = blockIdx.y * TILE, nt = min(TILE, n - t0);
    float acc[TILE];
    for (int t = 0; t < TILE; t++) acc[t] = 0.f;
    const u8* row = W + (long)r * row_bytes;
    long k = 32L * chunks;
    for (int c = lane; c < chunks; c += 32) {
        float w[32];
        for (int i = 0; i < 32; i++) w[i] = T::at(row, 32L * c + i);
#pragma unroll
        for (int t = 0; t < TILE; t++) {
            if (t < nt) {
                const float4* xv = (const float4*)(x + (t0 + t) * k + 32L * c);
                float s = 0.f;
                for (int i = 0; i < 8; i++) {
                    float4 v = xv[i];
                    s = __fmaf_rn(w[4 * i], v.x, s);
                    s = __fmaf_rn(w[4 * i + 1], v.y, s);
                    s = __fmaf_rn(w[4 * i + 2], v.z, s);
                    s = __fmaf_rn(w[4 * i + 3], v.w, s);
                }
                acc[t] = __fadd_rn(acc[t], s);
            }
        }
    }
    finish(acc, lane, r, t0, nt, bias, out, out_stride, accumulate);
}

#define MATMUL_Q(T)                                                                                              \
    extern "C" __global__ void matmul_##T(const u8* W, long row_bytes, int rows, int chunks, const signed char* xq, \
                                          const float* xd, const int* xs, const float* bias, float* out, int n,   \
                                          int out_stride, int accumulate) {                                       \
        matmul_q<T>(W, row_bytes, rows, chunks, xq, xd, xs, bias, out, n, out_stride, accumulate);               \
    }
#define MATMUL_F(T)                                                                                              \
    extern "C" __global__ void matmul_##T(const u8* W, long row_bytes, int rows, int chunks, const float* x,        \
                                          const float* bias, float* out, int n, int out_stride, int accumulate) { \
        matmul_f<T>(W, row_bytes, rows, chunks, x, bias, out, n, out_stride, accumulate);                        \
    }

MATMUL_Q(Q8_0)
MATMUL_Q(Q4_0)
MATMUL_Q(Q4_1)
MATMUL_Q(Q5_0)
MATMUL_Q(Q5_1)
MATMUL_Q(Q4_K)
MATMUL_Q(Q5_K)
MATMUL_Q(Q6_K)
MATMUL_F(F32)
MATMUL_F(F16)
MATMUL_F(BF16)
