// out[t, r] = row r of W . token t, for raw GGUF weights W [rows, row_bytes]. Every kernel here computes an
// output (row r, token t) in one canonical order, so that it depends on its row, its token and k, never on
// the batch or the kernel that ran:
//     v_c = the value of 32-weight chunk c (chunk_value; a float type's chunk: its 32 products in order)
//     p_g = ((0 + v_g) + v_(g+4)) + v_(g+8) + ...                      for g = 0, 1, 2, 3
//     out = (p_0 + p_1) + (p_2 + p_3), then + bias, then out + value when accumulating
// Every float operation is an explicit _rn intrinsic, which the compiler may not fuse or reorder.
// matvec (up to TILE tokens a thread block) makes the v_c in parallel into shared memory and then sums
// them; mma (prompts) takes the chunks' exact integer products from int8 tensor cores, its warp g
// summing p_g. One launch takes up to three matrices of one type and width that multiply the same x
// (q, k, v; gate, up): the groups of rows of matrix 0 come first, then those of 1, then those of 2.

#define TILE 8
#define MV_THREADS 128
#define FULL 0xffffffffu

struct Job {
    const u8* W;
    const float* bias;  // or NULL
    float* out;  // [n, rows]
    int rows;
};

// the matrix of group `block` of rows and its first row; a matrix's rows go `per` to a group
__device__ __forceinline__ Job pick(const Job& j0, const Job& j1, const Job& j2, int per, int block, int& r0) {
    int blocks0 = (j0.rows + per - 1) / per, blocks1 = (j1.rows + per - 1) / per;
    r0 = block * per;
    if (block < blocks0) return j0;
    if (block < blocks0 + blocks1) { r0 -= blocks0 * per; return j1; }
    r0 -= (blocks0 + blocks1) * per;
    return j2;
}

__device__ __forceinline__ void store(const Job& job, int r, int t, float v, int accumulate) {
    if (job.bias) v = __fadd_rn(v, job.bias[r]);
    float* o = job.out + (long)t * job.rows + r;
    *o = accumulate ? __fadd_rn(*o, v) : v;
}

__device__ __forceinline__ int dot16(const int* q, int4 x) {
    return __dp4a(q[3], x.w, __dp4a(q[2], x.z, __dp4a(q[1], x.y, __dp4a(q[0], x.x, 0))));
}

// a chunk of weights (d, m) against int8 activations (scale dx, sum sx, an integer) whose integer product is exact
// (|exact| < 2^24, so its float is too)
template <class T>
__device__ __forceinline__ float chunk_value(float d, float m, float exact, float dx, float sx) {
    float v = __fmul_rn(__fmul_rn(d, dx), exact);
    if (T::HAS_MIN) v = __fmaf_rn(__fmul_rn(m, dx), sx, v);
    return v;
}

// ---- matvec: a thread block takes `per` rows and up to TILE tokens, its rows' bytes staged in shared memory

template <int W>
__device__ __forceinline__ void copy_async(u8* dst, const u8* src) {
    unsigned at = (unsigned)__cvta_generic_to_shared(dst);
    if (W == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(at), "l"(src));
    else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(at), "l"(src), "n"(W));
}

template <int W>
__device__ __forceinline__ void copy_by(u8* dst, const u8* src, long length) {
    for (long i = threadIdx.x * W; i < length; i += (long)blockDim.x * W) copy_async<W>(dst + i, src + i);
}

// starts copying length bytes at src (2-byte aligned, as every type's rows are) to dst, in the widest
// copies all three allow; landed() waits for every copy the thread block started
__device__ void copy(u8* dst, const u8* __restrict__ src, long length) {
    unsigned alignment = (unsigned)((size_t)src | (size_t)length | (size_t)dst);
    if (alignment % 16 == 0) copy_by<16>(dst, src, length);
    else if (alignment % 8 == 0) copy_by<8>(dst, src, length);
    else if (alignment % 4 == 0) copy_by<4>(dst, src, length);
    else
        for (long i = threadIdx.x; i < length / 2; i += blockDim.x) ((u16*)dst)[i] = ((const u16*)src)[i];
}

__device__ __forceinline__ void landed() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();
}

// the copies started since the last commit() form one group; wait_but_last() waits for all groups but the last
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void wait_but_last() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// starts copying group `group`'s rows to dst (per * row_bytes)
__device__ __forceinline__ void stage_rows(u8* dst, const Job& j0, const Job& j1, const Job& j2, int per, int group,
                                           long row_bytes) {
    int r0;
    Job job = pick(j0, j1, j2, per, group, r0);
    copy(dst, job.W + (long)r0 * row_bytes, min(per, job.rows - r0) * row_bytes);
}

// v_c of chunk c of staged row `row`, for the block's nt <= NT tokens (xq: [nt, chunks, 32] int8, xd and xs:
// [nt, chunks], in global or shared memory)
template <class T, int NT>
__device__ __forceinline__ void values(const u8* row, int c, int chunks, const signed char* xq, const float* xd,
                                       const int* xs, int nt, float* s, int stride) {
    Chunk ch;
    T::load(row + (long)(c / T::CHUNKS) * T::BYTES, c % T::CHUNKS, ch);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t < nt) {
            int at = t * chunks + c;
            const int4* x = (const int4*)(xq + 32L * at);
            int exact = ch.sa * dot16(ch.q, x[0]) + ch.sb * dot16(ch.q + 4, x[1]);
            s[t * stride] = chunk_value<T>(ch.d, ch.m, (float)exact, xd[at], (float)xs[at]);
        }
    }
}

// the float types: x [n, chunks * 32] float32; a chunk's 32 products summed in order
template <class T, int NT>
__device__ __forceinline__ void float_values(const u8* row, int c, int chunks, const float* __restrict__ x, int t0,
                                             int nt, float* s, int stride) {
    float w[32];
    for (int i = 0; i < 32; i++) w[i] = T::at(row, 32L * c + i);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t < nt) {
            const float4* xv = (const float4*)(x + (long)(t0 + t) * chunks * 32 + 32L * c);
            float v = 0.f;
            for (int i = 0; i < 8; i++) {
                float4 f = xv[i];
                v = __fmaf_rn(w[4 * i], f.x, v);
                v = __fmaf_rn(w[4 * i + 1], f.y, v);
                v = __fmaf_rn(w[4 * i + 2], f.z, v);
                v = __fmaf_rn(w[4 * i + 3], f.w, v);
            }
            s[t * stride] = v;
        }
    }
}

// the values of the staged rows' chunks into s (row r, chunk c at s[r * stride + c], token t's at + t * token_stride),
// items (row, chunk) handed out in turn to the threads
template <class T, bool QUANTIZED, int NT>
__device__ __forceinline__ void all_values(const u8* rows, long row_bytes, int here, int chunks, const signed char* xq,
                                           const float* xd, const int* xs, const float* x, int t0, int nt, float* s,
                                           int token_stride) {
    int stride = chunks | 1, row = threadIdx.x / chunks, c = threadIdx.x % chunks;
    const int row_step = blockDim.x / chunks, chunk_step = blockDim.x % chunks;
    while (row < here) {
        float* out = s + row * stride + c;
        if constexpr (QUANTIZED) values<T, NT>(rows + row * row_bytes, c, chunks, xq, xd, xs, nt, out, token_stride);
        else float_values<T, NT>(rows + row * row_bytes, c, chunks, x, t0, nt, out, token_stride);
        row += row_step, c += chunk_step;
        if (c >= chunks) row++, c -= chunks;
    }
}

// s: [TILE][per][stride] values of the block's rows; p_g by four adjacent lanes, then (p0 + p1) + (p2 + p3)
__device__ void sum_rows(const float* s, int per, int stride, int chunks, const Job& job, int r0, int t0, int nt,
                         int accumulate) {
    int total = nt * per * 4;
    for (int base = 0; base < total; base += blockDim.x) {
        int idx = base + threadIdx.x, g = idx & 3, item = idx >> 2;
        int t = item / per, row = item % per;
        float p = 0.f;
        if (idx < total) {
            const float* v = s + (t * per + row) * stride;
#pragma unroll 8
            for (int c = g; c < chunks; c += 4) p = __fadd_rn(p, v[c]);  // unrolled: loads ahead of the adds
        }
        p = __fadd_rn(p, __shfl_down_sync(FULL, p, 1));
        p = __fadd_rn(p, __shfl_down_sync(FULL, p, 2));
        if (idx < total && g == 0 && r0 + row < job.rows) store(job, r0 + row, t0 + t, p, accumulate);
    }
}

// smem: two buffers of staged rows (per * row_bytes each), the values [tile][per][chunks | 1], and where they
// take at most X_STAGED bytes, the tile's int8 activations (xq, xd, xs), tile = min(n, TILE), each rounded up
// to 16 bytes (GpuMatrix.shared_bytes). A thread block takes groups of `per` rows blockIdx.x, + gridDim.x, ...,
// copying the next group's rows while it multiplies one.
#define X_STAGED 16384
template <class T, bool QUANTIZED>
__device__ void matvec(const Job& j0, const Job& j1, const Job& j2, int per, long row_bytes, int chunks,
                       const signed char* xq, const float* xd, const int* xs, const float* x, int n, int accumulate) {
    extern __shared__ __align__(16) u8 smem[];
    int t0 = blockIdx.y * TILE, nt = min(TILE, n - t0), tile = min(n, TILE), stride = chunks | 1;
    long buffer = (per * row_bytes + 15) & ~15L;
    float* s = (float*)(smem + 2 * buffer);
    if constexpr (QUANTIZED) {
        xq += 32L * t0 * chunks, xd += (long)t0 * chunks, xs += (long)t0 * chunks;
        if (tile * chunks * 40 <= X_STAGED) {
            u8* staged = (u8*)s + ((4 * tile * per * stride + 15) & ~15);
            copy(staged, (const u8*)xq, 32L * nt * chunks);
            copy(staged + 32 * tile * chunks, (const u8*)xd, 4L * nt * chunks);
            copy(staged + 36 * tile * chunks, (const u8*)xs, 4L * nt * chunks);
            xq = (const signed char*)staged, xd = (const float*)(staged + 32 * tile * chunks);
            xs = (const int*)(staged + 36 * tile * chunks);
        }
    }
    int groups = (j0.rows + per - 1) / per + (j1.rows + per - 1) / per + (j2.rows + per - 1) / per;
    stage_rows(smem, j0, j1, j2, per, blockIdx.x, row_bytes);
    commit();
    for (int group = blockIdx.x, k = 0; group < groups; group += gridDim.x, k ^= 1) {
        if (group + gridDim.x < groups) stage_rows(smem + (k ^ 1) * buffer, j0, j1, j2, per, group + gridDim.x, row_bytes);
        commit();
        wait_but_last();  // this group's rows (and the activations) are here
        __syncthreads();
        int r0;
        Job job = pick(j0, j1, j2, per, group, r0);
        int here = min(per, job.rows - r0);
        const u8* rows = smem + k * buffer;
        if (nt == 1) all_values<T, QUANTIZED, 1>(rows, row_bytes, here, chunks, xq, xd, xs, x, t0, nt, s, per * stride);
        else all_values<T, QUANTIZED, TILE>(rows, row_bytes, here, chunks, xq, xd, xs, x, t0, nt, s, per * stride);
        __syncthreads();
        sum_rows(s, per, stride, chunks, job, r0, t0, nt, accumulate);
    }
}

// ---- experts: out[p] = the matrix of expert ids[p] . token p / tokens_per (+ the expert's row of bias [n_expert,
// rows] where given) ([pairs, rows]), a thread block per (group of `per` rows, pair p), each output summed in the
// canonical order above, so a pair's bits depend on its expert, its row and its token alone. smem: the group's
// rows, then the values [per][chunks | 1].
template <class T, bool QUANTIZED>
__device__ void experts(const u8* W, long expert_bytes, const float* bias, const int* ids, int tokens_per, float* out,
                        int rows, int per, long row_bytes, int chunks, const signed char* xq, const float* xd,
                        const int* xs, const float* x) {
    extern __shared__ __align__(16) u8 smem[];
    int pair = blockIdx.y, t = pair / tokens_per, r0 = blockIdx.x * per, here = min(per, rows - r0);
    int stride = chunks | 1;
    if (ids[pair] < 0) return;  // Flywheel: another batch of slots takes this pair (flywheel.NOT_IN_BATCH)
    const u8* matrix = W + (long)ids[pair] * expert_bytes;
    copy(smem, matrix + (long)r0 * row_bytes, here * row_bytes);
    landed();
    float* s = (float*)(smem + ((per * row_bytes + 15) & ~15L));
    long at = (long)t * chunks;
    if constexpr (QUANTIZED)
        all_values<T, true, 1>(smem, row_bytes, here, chunks, xq + 32 * at, xd + at, xs + at, x, 0, 1, s, 0);
    else
        all_values<T, false, 1>(smem, row_bytes, here, chunks, xq, xd, xs, x, t, 1, s, 0);
    __syncthreads();
    const float* expert_bias = bias ? bias + (long)ids[pair] * rows : NULL;
    sum_rows(s, per, stride, chunks, Job{matrix, expert_bias, out + (long)pair * rows, rows}, r0, 0, 1, 0);
}

// ---- mma: a thread block takes MMA_ROWS rows and MMA_TOKENS tokens, in steps of STEP chunks. Between two
// barriers, a step's raw weight bytes and int8 activations are copied (cp.async) while the step before it is
// decoded into int8 words in shared memory and the one before that is multiplied. Warp w multiplies a tile of
// 32 rows by 32 tokens, number w / 4 of the block's (rows first), of the step's chunks w % 4 and w % 4 + 4, so
// the warps of class g = w % 4 sum p_g.

#define MMA_ROWS 64
#define MMA_TOKENS 64
#define ROW_TILES (MMA_ROWS / 32)
#define MMA_THREADS (4 * ROW_TILES * (MMA_TOKENS / 32) * 32)  // weights.MMA_THREADS
#define MMA_BLOCKS (512 / MMA_THREADS)  // thread blocks a multiprocessor holds: 128 registers a thread
#define STEP 8

struct Scales {
    float sa, sb;  // the integer scales, as floats
    float d, m;
};

// word w of a 32-byte row (weights or tokens) in shared memory: rows 4..7 of each 8 take their halves
// swapped, so the eight rows a fragment load touches fall in distinct banks
__device__ __forceinline__ int swz(int row, int w) { return row * 8 + (w ^ (row & 4)); }

// one step's copies: each row's raw bytes from the 16-byte boundary below them, and the activations
template <class T>
struct Stage {
    static const int ROW = ((STEP * T::BYTES / T::CHUNKS + 15) / 16 + 1) * 16;  // GpuMatrix.mma_shared_bytes
    u8 w[MMA_ROWS * ROW];
    int x[STEP * MMA_TOKENS * 8];  // [chunk][token] swizzled
    float dx[STEP * MMA_TOKENS];
    float sx[STEP * MMA_TOKENS];  // the integer sums, copied as bits, then made floats by decode_step
};

// a step's weights as int8 words, [chunk][row] swizzled, and their scales
struct Decoded {
    int a[STEP * MMA_ROWS * 8];
    Scales scales[STEP * MMA_ROWS];
};

// shared memory of a thread block: step k's copies in stage[k % 3], its words in decoded[k % 2]; later the
// partial sums (mma_finish)
template <class T>
struct MmaShared {
    Stage<T> stage[3];
    Decoded decoded[2];
};

// the first byte of step c0 in row r, and the step's length in bytes
template <class T>
__device__ __forceinline__ const u8* step_bytes(const Job& job, int r, long row_bytes, int chunks, int c0, int& length) {
    length = (min(STEP, chunks - c0) + T::CHUNKS - 1) / T::CHUNKS * T::BYTES;
    return job.W + r * row_bytes + (long)(c0 / T::CHUNKS) * T::BYTES;
}

// starts the copies of step c0 (chunks past the last and tokens past n are zeros; landed() waits); token t is
// row tokens[t] of the activations where tokens is given
template <class T>
__device__ void stage_step(Stage<T>& s, const Job& job, int r0, long row_bytes, int chunks, int c0,
                           const signed char* xq, const float* xd, const int* xs, int t0, int n, const int* tokens) {
    const int units = Stage<T>::ROW / 16;
    for (int item = threadIdx.x; item < MMA_ROWS * units; item += MMA_THREADS) {
        int row = item / units, u = item % units, length;
        if (r0 + row >= job.rows) continue;
        const u8* src = step_bytes<T>(job, r0 + row, row_bytes, chunks, c0, length);
        const u8* from = (const u8*)((size_t)src & ~(size_t)15) + 16 * u;
        if (from < src + length) copy_async<16>(s.w + row * Stage<T>::ROW + 16 * u, from);
    }
    int here = min(STEP, chunks - c0);
    for (int item = threadIdx.x; item < STEP * MMA_TOKENS * 2; item += MMA_THREADS) {
        int half = item & 1, token = (item >> 1) % MMA_TOKENS, ci = item / (2 * MMA_TOKENS), t = t0 + token;
        int* to = s.x + ci * MMA_TOKENS * 8 + swz(token, 4 * half);  // four words, 16-byte aligned
        if (ci < here && t < n) {
            long row = tokens ? tokens[t] : t;
            copy_async<16>((u8*)to, (const u8*)(xq + 32 * (row * chunks + c0 + ci) + 16 * half));
        } else {
            *(int4*)to = int4{0, 0, 0, 0};
        }
    }
    for (int item = threadIdx.x; item < STEP * MMA_TOKENS; item += MMA_THREADS) {
        int ci = item / MMA_TOKENS, t = t0 + item % MMA_TOKENS;
        if (ci < here && t < n) {
            long at = (tokens ? tokens[t] : (long)t) * chunks + c0 + ci;
            copy_async<4>((u8*)(s.dx + item), (const u8*)(xd + at));
            copy_async<4>((u8*)(s.sx + item), (const u8*)(xs + at));
        } else {
            s.dx[item] = 0.f;
            s.sx[item] = 0.f;
        }
    }
}

// the staged weights of step c0 as int8 words and scales (zeros past the last row and chunk); the sums as floats
template <class T>
__device__ void decode_step(Decoded& out, Stage<T>& s, const Job& job, int r0, long row_bytes, int chunks, int c0) {
    for (int item = threadIdx.x; item < STEP * MMA_TOKENS; item += MMA_THREADS) s.sx[item] = (float)__float_as_int(s.sx[item]);
    for (int item = threadIdx.x; item < STEP * MMA_ROWS; item += MMA_THREADS) {
        int row = item % MMA_ROWS, ci = item / MMA_ROWS, length;
        Chunk ch = {};
        if (c0 + ci < chunks && r0 + row < job.rows) {
            size_t skew = (size_t)step_bytes<T>(job, r0 + row, row_bytes, chunks, c0, length) & 15;
            T::load(s.w + row * Stage<T>::ROW + skew + (ci / T::CHUNKS) * T::BYTES, ci % T::CHUNKS, ch);
        }
        int4* a = (int4*)(out.a + ci * MMA_ROWS * 8);
        a[swz(row, 0) / 4] = int4{ch.q[0], ch.q[1], ch.q[2], ch.q[3]};
        a[swz(row, 4) / 4] = int4{ch.q[4], ch.q[5], ch.q[6], ch.q[7]};
        out.scales[ci * MMA_ROWS + row] = Scales{(float)ch.sa, (float)ch.sb, ch.d, ch.m};
    }
}

// The mma's sums start from the bits of the float B = 1.5 * 2^23: a sum p of products of int8 words, |p| <= 32 * 128
// * 128 < 2^22, leaves the bits of the float B + p. An integer scale s times p is then one fma of exact numbers,
// s (B + p) + (-s B), rounded once to s p, which is exact (an integer below 2^24): no conversion instruction (an
// eighth of the rate of float arithmetic) and no integer multiply.
#define BIAS_BITS 0x4B400000
#define BIAS 12582912.f
__device__ __forceinline__ float scaled(int sum, float s, float minus_sb) {
    return __fmaf_rn(s, __int_as_float(sum), minus_sb);
}

// d[0..3] = BIAS_BITS + rows (g, g, g + 8, g + 8) x tokens (2q, 2q + 1, 2q, 2q + 1) of A [16 x 32] . B [32 x 8], exact
__device__ __forceinline__ void mma32(int* d, int a0, int a1, int a2, int a3, int b0, int b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(BIAS_BITS));
}

__device__ __forceinline__ void mma16(int* d, int a0, int a1, int b0) {  // the same for 16 weights
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(b0), "r"(BIAS_BITS));
}

// acc[m][t][e] += v_c of the step's chunk ci: this warp's 2 row tiles of 16 (from row0) by 4 token tiles of 8
// (from token0)
template <class T>
__device__ __forceinline__ void mma_chunk(const Decoded& dec, const Stage<T>& s, int ci, int row0, int token0,
                                          float (&acc)[2][4][4]) {
    int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const int* a = dec.a + ci * MMA_ROWS * 8;
    const int* x = s.x + ci * MMA_TOKENS * 8;
    const float* dx = s.dx + ci * MMA_TOKENS;
    const float* sx = s.sx + ci * MMA_TOKENS;
#pragma unroll
    for (int mt = 0; mt < 2; mt++) {
        int ra = row0 + mt * 16 + g, rb = ra + 8;
        int a0 = a[swz(ra, q)], a1 = a[swz(rb, q)], a2 = a[swz(ra, 4 + q)], a3 = a[swz(rb, 4 + q)];
        Scales sa = dec.scales[ci * MMA_ROWS + ra], sb = dec.scales[ci * MMA_ROWS + rb];
        float lo_bias[2] = {__fmul_rn(sa.sa, -BIAS), __fmul_rn(sb.sa, -BIAS)};  // rows ra, rb
        float hi_bias[2] = {__fmul_rn(sa.sb, -BIAS), __fmul_rn(sb.sb, -BIAS)};
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            int token = token0 + nt * 8 + g, b0 = x[swz(token, q)], b1 = x[swz(token, 4 + q)];
            float exact[4];  // the chunk's exact integer products, as floats
            if (T::SPLIT) {  // the halves have their own scales; each scaled half, and their sum, below 2^24
                int lo[4], hi[4];
                mma16(lo, a0, a1, b0);
                mma16(hi, a2, a3, b1);
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const Scales& sc = e < 2 ? sa : sb;
                    exact[e] = __fadd_rn(scaled(lo[e], sc.sa, lo_bias[e >> 1]), scaled(hi[e], sc.sb, hi_bias[e >> 1]));
                }
            } else {
                int sums[4];
                mma32(sums, a0, a1, a2, a3, b0, b1);
#pragma unroll
                for (int e = 0; e < 4; e++) exact[e] = scaled(sums[e], e < 2 ? sa.sa : sb.sa, lo_bias[e >> 1]);
            }
            int t = token0 + nt * 8 + 2 * q;  // and t + 1
            float2 dxt = *(const float2*)(dx + t), sxt = *(const float2*)(sx + t);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const Scales& sc = e < 2 ? sa : sb;
                float v = chunk_value<T>(sc.d, sc.m, exact[e], e & 1 ? dxt.y : dxt.x, e & 1 ? sxt.y : sxt.x);
                acc[mt][nt][e] = __fadd_rn(acc[mt][nt][e], v);
            }
        }
    }
}

// warp w's class (w % 4) and the first row and token of its tile
__device__ __forceinline__ void warp_tile(int& cls, int& row0, int& token0) {
    int warp = threadIdx.x >> 5, tile = warp >> 2;
    cls = warp & 3, row0 = 32 * (tile % ROW_TILES), token0 = 32 * (tile / ROW_TILES);
}

// the partial sums p_g through shared memory, [4][MMA_TOKENS][PART_ROWS] (PART_ROWS: the rows padded, so that the
// lanes of a warp store to distinct banks), then out = (p0 + p1) + (p2 + p3), consecutive threads taking
// consecutive rows of a token, so that a warp's loads and stores of out are coalesced; token t's outputs go to
// row out_rows[t] of out where out_rows is given
#define PART_ROWS (MMA_ROWS + 4)
__device__ void mma_finish(float* part, float (&acc)[2][4][4], const Job& job, int r0, int t0, int n, int accumulate,
                           const int* out_rows) {
    int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, cls, row0, token0;
    warp_tile(cls, row0, token0);
    __syncthreads();
    for (int mt = 0; mt < 2; mt++)
        for (int nt = 0; nt < 4; nt++)
            for (int e = 0; e < 4; e++) {
                int row = row0 + mt * 16 + g + (e >= 2 ? 8 : 0), token = token0 + nt * 8 + 2 * q + (e & 1);
                part[(cls * MMA_TOKENS + token) * PART_ROWS + row] = acc[mt][nt][e];
            }
    __syncthreads();
    const int size = MMA_TOKENS * PART_ROWS;
    for (int o = threadIdx.x; o < MMA_ROWS * MMA_TOKENS; o += MMA_THREADS) {
        int row = o % MMA_ROWS, token = o / MMA_ROWS, at = token * PART_ROWS + row, r = r0 + row, t = t0 + token;
        float v = __fadd_rn(__fadd_rn(part[at], part[size + at]), __fadd_rn(part[2 * size + at], part[3 * size + at]));
        if (r < job.rows && t < n) store(job, r, out_rows ? out_rows[t] : t, v, accumulate);
    }
}

// the tokens t0 .. t0 + MMA_TOKENS - 1 of n, read through tokens and written through out_rows where given
template <class T>
__device__ void mma(const Job& job, int r0, long row_bytes, int chunks, const signed char* xq, const float* xd,
                    const int* xs, int n, int accumulate, int t0, const int* tokens, const int* out_rows) {
    extern __shared__ __align__(16) u8 smem[];
    static_assert(sizeof(MmaShared<T>) >= 4 * MMA_TOKENS * PART_ROWS * sizeof(float), "mma_finish's partial sums fit");
    MmaShared<T>& sh = *(MmaShared<T>*)smem;
    int cls, row0, token0;
    warp_tile(cls, row0, token0);
    float acc[2][4][4];
    for (int i = 0; i < 32; i++) (&acc[0][0][0])[i] = 0.f;
    int steps = (chunks + STEP - 1) / STEP;
    stage_step<T>(sh.stage[0], job, r0, row_bytes, chunks, 0, xq, xd, xs, t0, n, tokens);
    landed();
    if (steps > 1) stage_step<T>(sh.stage[1], job, r0, row_bytes, chunks, STEP, xq, xd, xs, t0, n, tokens);
    decode_step<T>(sh.decoded[0], sh.stage[0], job, r0, row_bytes, chunks, 0);
    for (int k = 0; k < steps; k++) {
        landed();  // step k + 1's copies are here; every warp has decoded step k and multiplied step k - 1
        int c0 = k * STEP;
        if (k + 2 < steps)
            stage_step<T>(sh.stage[(k + 2) % 3], job, r0, row_bytes, chunks, c0 + 2 * STEP, xq, xd, xs, t0, n, tokens);
        if (k + 1 < steps)
            decode_step<T>(sh.decoded[(k + 1) % 2], sh.stage[(k + 1) % 3], job, r0, row_bytes, chunks, c0 + STEP);
        for (int ci = cls; ci < STEP && c0 + ci < chunks; ci += 4)
            mma_chunk<T>(sh.decoded[k % 2], sh.stage[k % 3], ci, row0, token0, acc);
    }
    mma_finish((float*)smem, acc, job, r0, t0, n, accumulate, out_rows);
}

// ---- mma_experts: the mma over a mixture's (row, rank) pairs grouped by expert (experts.cu's group_pairs), each
// expert's weights read once a tile of pairs. Thread block (group of rows, y) takes tile y, (expert, first grouped
// position of the expert's pairs, their count, the tile's first of them); gather: its tokens are the pairs' rows of
// the activations (token_of) and its outputs go to the grouped positions; else its tokens are the activations at
// the grouped positions and its outputs go to the pairs' own rows (order). Up to two matrices (gate, up) of one
// type and shape, each with its experts' biases [n_expert, rows] where given. A pair's bits are those experts()
// above gives it: the canonical order depends on neither.
template <class T>
__device__ void mma_experts(const u8* W0, const float* bias0, float* out0, const u8* W1, const float* bias1,
                            float* out1, long expert_bytes, int rows, long row_bytes, int chunks,
                            const signed char* xq, const float* xd, const int* xs, const int4* tiles,
                            const int* token_of, const int* order) {
    int4 tile = tiles[blockIdx.y];
    if (tile.x < 0) return;  // past the last tile
    long expert = tile.x * expert_bytes, grouped = tile.y;
    long in_shift = token_of ? 0 : grouped * chunks, out_shift = order ? 0 : grouped * rows;
    long biases = (long)tile.x * rows;
    Job j0{W0 + expert, bias0 ? bias0 + biases : NULL, out0 + out_shift, rows};
    Job j1 = W1 ? Job{W1 + expert, bias1 ? bias1 + biases : NULL, out1 + out_shift, rows} : Job{NULL, NULL, NULL, 0};
    int r0;
    Job job = pick(j0, j1, Job{NULL, NULL, NULL, 0}, MMA_ROWS, blockIdx.x, r0);
    mma<T>(job, r0, row_bytes, chunks, xq + 32 * in_shift, xd + in_shift, xs + in_shift, tile.z, 0, tile.w,
           token_of ? token_of + grouped : NULL, order ? order + grouped : NULL);
}

#define JOBS                                                                                                   \
    const u8 *W0, const float *bias0, float *out0, int rows0, const u8 *W1, const float *bias1, float *out1, int rows1, \
        const u8 *W2, const float *bias2, float *out2, int rows2
#define JOB_LIST Job{W0, bias0, out0, rows0}, Job{W1, bias1, out1, rows1}, Job{W2, bias2, out2, rows2}
#define MATVEC(T, QUANTIZED)                                                                                   \
    extern "C" __global__ void __launch_bounds__(MV_THREADS) matvec_##T(                                       \
        JOBS, long row_bytes, int chunks, int per, const signed char* xq, const float* xd, const int* xs,      \
        const float* x, int n, int accumulate) {                                                              \
        matvec<T, QUANTIZED>(JOB_LIST, per, row_bytes, chunks, xq, xd, xs, x, n, accumulate);                     \
    }
#define MMA(T)                                                                                                 \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, MMA_BLOCKS) mma_##T(                              \
        JOBS, long row_bytes, int chunks, const signed char* xq, const float* xd, const int* xs, int n,        \
        int accumulate) {                                                                                     \
        int r0;                                                                                               \
        Job job = pick(JOB_LIST, MMA_ROWS, blockIdx.x, r0);                                                      \
        mma<T>(job, r0, row_bytes, chunks, xq, xd, xs, n, accumulate, blockIdx.y * MMA_TOKENS, NULL, NULL);   \
    }
#define EXPERTS(T, QUANTIZED)                                                                                  \
    extern "C" __global__ void __launch_bounds__(MV_THREADS) experts_##T(                                      \
        const u8* W, long expert_bytes, const float* bias, const int* ids, int tokens_per, float* out, int rows, \
        int per, long row_bytes, int chunks, const signed char* xq, const float* xd, const int* xs, const float* x) { \
        experts<T, QUANTIZED>(W, expert_bytes, bias, ids, tokens_per, out, rows, per, row_bytes, chunks, xq, xd, xs, \
                              x);                                                                             \
    }
#define MMA_EXPERTS(T)                                                                                         \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, MMA_BLOCKS) mma_experts_##T(                      \
        const u8* W0, const float* bias0, float* out0, const u8* W1, const float* bias1, float* out1,          \
        long expert_bytes, int rows, long row_bytes, int chunks, const signed char* xq, const float* xd,       \
        const int* xs, const int4* tiles, const int* token_of, const int* order) {                            \
        mma_experts<T>(W0, bias0, out0, W1, bias1, out1, expert_bytes, rows, row_bytes, chunks, xq, xd, xs, tiles, \
                       token_of, order);                                                                      \
    }
#define QUANT(T) MATVEC(T, true) MMA(T) EXPERTS(T, true) MMA_EXPERTS(T)

QUANT(Q8_0)
QUANT(Q4_0)
QUANT(Q4_1)
QUANT(Q5_0)
QUANT(Q5_1)
QUANT(Q4_K)
QUANT(Q5_K)
QUANT(Q6_K)
QUANT(MXFP4)
MATVEC(F32, false) EXPERTS(F32, false)
MATVEC(F16, false) EXPERTS(F16, false)
MATVEC(BF16, false) EXPERTS(BF16, false)
