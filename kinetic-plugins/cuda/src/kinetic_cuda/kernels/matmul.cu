// out[t, r] = row r of W . token t, for raw GGUF weights W [rows, row_bytes]. One warp per row and up to
// TILE tokens: lane l takes chunks l, l + 32, l + 64, ... in order, then the 32 lanes are added in one
// butterfly. So an output depends on its row, its token and k, never on the batch: every float operation
// is an explicit _rn intrinsic, which the compiler may not fuse or reorder. With accumulate, out += value.
// One launch takes up to three matrices of one type and width that multiply the same x (q, k, v; gate, up):
// the thread blocks of matrix 0 come first, then those of 1, then those of 2.

#define TILE 8

struct Job {
    const u8* W;
    const float* bias;  // or NULL
    float* out;  // [n, rows]
    int rows;
};

// the matrix and row of this warp; false past the last row
__device__ __forceinline__ bool pick(Job& job, const Job& j0, const Job& j1, const Job& j2, int& r) {
    int warps = blockDim.x >> 5, block = blockIdx.x;
    int blocks0 = (j0.rows + warps - 1) / warps, blocks1 = (j1.rows + warps - 1) / warps;
    if (block < blocks0) job = j0;
    else if (block < blocks0 + blocks1) { job = j1; block -= blocks0; }
    else { job = j2; block -= blocks0 + blocks1; }
    r = block * warps + (threadIdx.x >> 5);
    return r < job.rows;
}

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
__device__ void matmul_q(const Job& job, int r, long row_bytes, int chunks, const signed char* __restrict__ xq,
                         const float* __restrict__ xd, const int* __restrict__ xs, int n, int accumulate) {
    int lane = threadIdx.x & 31;
    int t0 = blockIdx.y * TILE, nt = min(TILE, n - t0);
    float acc[TILE];
    for (int t = 0; t < TILE; t++) acc[t] = 0.f;
    const u8* row = job.W + (long)r * row_bytes;
#pragma unroll 2
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
    finish(acc, lane, r, t0, nt, job.bias, job.out, job.rows, accumulate);
}

// x: [n, 32 chunks] float32; a chunk's 32 products are summed in order, then added to the lane's sum
template <class T>
__device__ void matmul_f(const Job& job, int r, long row_bytes, int chunks, const float* __restrict__ x, int n,
                         int accumulate) {
    int lane = threadIdx.x & 31;
    int t0 = blockIdx.y * TILE, nt = min(TILE, n - t0);
    float acc[TILE];
    for (int t = 0; t < TILE; t++) acc[t] = 0.f;
    const u8* row = job.W + (long)r * row_bytes;
    long k = 32L * chunks;
#pragma unroll 2
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
    finish(acc, lane, r, t0, nt, job.bias, job.out, job.rows, accumulate);
}

#define JOBS                                                                                                   \
    const u8 *W0, const float *bias0, float *out0, int rows0, const u8 *W1, const float *bias1, float *out1, int rows1, \
        const u8 *W2, const float *bias2, float *out2, int rows2
#define PICK                                                                                                   \
    Job job;                                                                                                   \
    int r;                                                                                                     \
    if (!pick(job, Job{W0, bias0, out0, rows0}, Job{W1, bias1, out1, rows1}, Job{W2, bias2, out2, rows2}, r)) return;
#define MATMUL_Q(T)                                                                                            \
    extern "C" __global__ void matmul_##T(JOBS, long row_bytes, int chunks, const signed char* xq, const float* xd, \
                                          const int* xs, int n, int accumulate) {                               \
        PICK matmul_q<T>(job, r, row_bytes, chunks, xq, xd, xs, n, accumulate);                                 \
    }
#define MATMUL_F(T)                                                                                            \
    extern "C" __global__ void matmul_##T(JOBS, long row_bytes, int chunks, const float* x, int n, int accumulate) { \
        PICK matmul_f<T>(job, r, row_bytes, chunks, x, n, accumulate);                                          \
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
