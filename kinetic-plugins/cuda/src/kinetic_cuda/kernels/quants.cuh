// Every weight type as 32-weight chunks. A chunk holds its quants as 8 words of 4 signed int8 (weights
// 0..15 in words 0..3, 16..31 in words 4..7), an integer scale for each half (sa, sb) and floats d and m:
// against int8 activations x with scale dx and sum sx its value is
//     (d * dx) * (sa * q[0:16] . x[0:16] + sb * q[16:32] . x[16:32]) + (m * dx) * sx   (one fma for "+ (m * dx) * sx")
// and its weights are d * (s * q) + m. Layouts as in ggml-common.h (and kinetic_formats.types).

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

struct Chunk {
    int q[8];
    int sa, sb;
    float d, m;
};

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ u16 f2h(float f) {  // to nearest, ties to even
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ u16 ld16(const u8* p) { return *(const u16*)p; }
__device__ __forceinline__ float half_at(const u8* p) { return h2f(ld16(p)); }
// a little-endian u32 at a 2-byte aligned address (blocks of 18, 22, 34 and 210 bytes)
__device__ __forceinline__ u32 ld32(const u8* p) { return (u32)ld16(p) | ((u32)ld16(p + 2) << 16); }

// bits 0..3 of x to bit 0 of bytes 0..3
__device__ __forceinline__ u32 spread4(u32 x) {
    return (x & 1u) | ((x & 2u) << 7) | ((x & 4u) << 14) | ((x & 8u) << 21);
}

__device__ __forceinline__ void unit_scales(Chunk& c, float d, float m) {
    c.sa = 1; c.sb = 1; c.d = d; c.m = m;
}

struct Q8_0 {
    static const int BYTES = 34, CHUNKS = 1, HAS_MIN = 0, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) {
        unit_scales(c, half_at(b), 0.f);
        for (int i = 0; i < 8; i++) c.q[i] = (int)ld32(b + 2 + 4 * i);
    }
};

// Q4_0, Q4_1: 16 bytes of nibbles at qs, low nibbles are weights 0..15; Q5_0, Q5_1 add the 32 fifth bits at qh
template <int QS, int QH, int OFFSET>
__device__ __forceinline__ void nibbles(const u8* b, Chunk& c) {
    u32 high = QH >= 0 ? ld32(b + QH) : 0u;
    for (int i = 0; i < 4; i++) {
        u32 w = ld32(b + QS + 4 * i);
        u32 lo = (w & 0x0F0F0F0Fu) | (spread4(high >> (4 * i)) << 4);
        u32 hi = ((w >> 4) & 0x0F0F0F0Fu) | (spread4(high >> (16 + 4 * i)) << 4);
        c.q[i] = (int)__vsub4(lo, OFFSET * 0x01010101u);
        c.q[i + 4] = (int)__vsub4(hi, OFFSET * 0x01010101u);
    }
}

struct Q4_0 {
    static const int BYTES = 18, CHUNKS = 1, HAS_MIN = 0, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) { unit_scales(c, half_at(b), 0.f); nibbles<2, -1, 8>(b, c); }
};
struct Q4_1 {
    static const int BYTES = 20, CHUNKS = 1, HAS_MIN = 1, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) { unit_scales(c, half_at(b), half_at(b + 2)); nibbles<4, -1, 0>(b, c); }
};
struct Q5_0 {
    static const int BYTES = 22, CHUNKS = 1, HAS_MIN = 0, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) { unit_scales(c, half_at(b), 0.f); nibbles<6, 2, 16>(b, c); }
};
struct Q5_1 {
    static const int BYTES = 24, CHUNKS = 1, HAS_MIN = 1, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) { unit_scales(c, half_at(b), half_at(b + 2)); nibbles<8, 4, 0>(b, c); }
};

// Q4_K, Q5_K: run j's 6-bit scale and min, packed in the 12 bytes at 4 (4-byte aligned), without branching:
// j < 4 takes the low 6 bits of bytes j and j + 4; j >= 4 the nibbles of byte j + 4 and the top bits of j - 4, j
__device__ __forceinline__ void k4_scale_min(const u8* b, int j, int& scale, int& min) {
    const u32* s = (const u32*)(b + 4);
    int shift = 8 * (j & 3);
    u32 a = (s[0] >> shift) & 0xFF, c = (s[1] >> shift) & 0xFF, e = (s[2] >> shift) & 0xFF;
    scale = j < 4 ? a & 63 : (e & 0xF) | ((a >> 6) << 4);
    min = j < 4 ? c & 63 : (e >> 4) | ((c >> 6) << 4);
}

__device__ __forceinline__ void words8(const u8* p, u32* w) {  // 32 bytes at a 16-byte aligned address
    uint4 a = ((const uint4*)p)[0], b = ((const uint4*)p)[1];
    w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w; w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
}

// Q4_K (QH < 0) and Q5_K: run j's low nibbles in the 32 bytes at QS + 32 (j / 2), low or high half by j % 2;
// Q5_K's fifth bit j of each of the 32 bytes at QH. Blocks of 144 and 176 bytes keep both 16-byte aligned.
template <int QS, int QH>
__device__ __forceinline__ void k4_load(const u8* b, int j, Chunk& c) {
    int scale, min;
    k4_scale_min(b, j, scale, min);
    c.sa = scale; c.sb = scale;
    u32 halves = *(const u32*)b;
    c.d = h2f((u16)(halves & 0xFFFF));
    c.m = -(h2f((u16)(halves >> 16)) * (float)min);
    u32 low[8], high[8];
    words8(b + QS + 32 * (j >> 1), low);
    if (QH >= 0) words8(b + QH, high);
    int shift = 4 * (j & 1);
    for (int i = 0; i < 8; i++) {
        u32 q = (low[i] >> shift) & 0x0F0F0F0Fu;
        if (QH >= 0) q |= ((high[i] >> j) & 0x01010101u) << 4;
        c.q[i] = (int)q;
    }
}

struct Q4_K {
    static const int BYTES = 144, CHUNKS = 8, HAS_MIN = 1, SPLIT = 0;
    __device__ static void load(const u8* b, int j, Chunk& c) { k4_load<16, -1>(b, j, c); }
};
struct Q5_K {
    static const int BYTES = 176, CHUNKS = 8, HAS_MIN = 1, SPLIT = 0;
    __device__ static void load(const u8* b, int j, Chunk& c) { k4_load<48, 16>(b, j, c); }
};

// Q6_K: chunk j = 32 sub + 128 n of the 256: low nibbles in ql[64 n + 32 (sub % 2)], high or low half by
// sub / 2; two high bits at bit 2 sub of qh[32 n]; int8 scales per 16 weights; q - 32. Its 210-byte blocks
// are padded to 224 on upload (weights.ALIGNED), so ql and qh are 16-byte aligned.
struct Q6_K {  // SPLIT: its halves have their own scales (sa != sb)
    static const int BYTES = 224, CHUNKS = 8, HAS_MIN = 0, SPLIT = 1;
    __device__ static void load(const u8* b, int j, Chunk& c) {
        int n = j >> 2, sub = j & 3;
        u32 low[8], high[8];
        words8(b + 64 * n + 32 * (sub & 1), low);
        words8(b + 128 + 32 * n, high);
        int low_shift = 4 * (sub >> 1), high_shift = 2 * sub;
        for (int i = 0; i < 8; i++) {
            u32 q = ((low[i] >> low_shift) & 0x0F0F0F0Fu) | (((high[i] >> high_shift) & 0x03030303u) << 4);
            c.q[i] = (int)__vsub4(q, 0x20202020u);
        }
        const signed char* scales = (const signed char*)(b + 192);
        c.sa = scales[8 * n + 2 * sub];
        c.sb = scales[8 * n + 2 * sub + 1];
        c.d = half_at(b + 208);
        c.m = 0.f;
    }
};

// MXFP4: the exponent byte e, then 16 bytes of 4-bit codes (low nibbles are weights 0..15); a weight is the
// code's e2m1 value, doubled (kvalues_mxfp4: grids.MXFP4_VALUES, integers), times 2^(e - 128). Blocks of 17
// bytes are read a byte at a time.
__device__ __forceinline__ float e8m0_half(u32 e) {  // 2^(e - 128) from its bits, subnormal for e < 2
    return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
}

// the int8 values of the codes in the low nibbles of q's 4 bytes: the magnitude's value picked by its 3 bits
// from the table's positive or negative half, then the half the sign (bit 3) names
__device__ __forceinline__ u32 mxfp4_values(u32 q) {
    u32 pick = (q & 7u) | ((q >> 4) & 0x70u) | ((q >> 8) & 0x700u) | ((q >> 12) & 0x7000u);
    u32 plus = __byte_perm(0x03020100u, 0x0C080604u, pick);  // 0, 1, 2, 3, 4, 6, 8, 12
    u32 minus = __byte_perm(0xFDFEFF00u, 0xF4F8FAFCu, pick);  // 0, -1, -2, -3, -4, -6, -8, -12
    u32 negative = ((q >> 3) & 0x01010101u) * 0xFFu;
    return (plus & ~negative) | (minus & negative);
}

struct MXFP4 {
    static const int BYTES = 17, CHUNKS = 1, HAS_MIN = 0, SPLIT = 0;
    __device__ static void load(const u8* b, int, Chunk& c) {
        unit_scales(c, e8m0_half(b[0]), 0.f);
        for (int i = 0; i < 4; i++) {
            const u8* w = b + 1 + 4 * i;
            u32 codes = (u32)w[0] | ((u32)w[1] << 8) | ((u32)w[2] << 16) | ((u32)w[3] << 24);
            c.q[i] = (int)mxfp4_values(codes & 0x0F0F0F0Fu);
            c.q[i + 4] = (int)mxfp4_values((codes >> 4) & 0x0F0F0F0Fu);
        }
    }
};

// the float types: weight i of a row
struct F32 {
    static const int SIZE = 4;
    __device__ static float at(const u8* row, long i) { return ((const float*)row)[i]; }
};
struct F16 {
    static const int SIZE = 2;
    __device__ static float at(const u8* row, long i) { return h2f(((const u16*)row)[i]); }
};
struct BF16 {
    static const int SIZE = 2;
    __device__ static float at(const u8* row, long i) { return __uint_as_float((u32)((const u16*)row)[i] << 16); }
};
