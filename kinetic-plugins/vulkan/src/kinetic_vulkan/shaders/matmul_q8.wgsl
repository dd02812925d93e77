// x[t] . w[r] for the pass's tokens t and this part's rows r of a quantized matrix (rows.wgsl), its 32-weight chunks
// (quants/*.wgsl: chunk) against the tokens' int8 chunks (quantize.wgsl). Lane l's sum, from p = 0, over its chunks
// in order: p = fma(d * dx, exact, p), then p = fma(m * dx, sx, p) where the type has a min, where
// exact = sa * (q[0:16] . x[0:16]) + sb * (q[16:32] . x[16:32]) is an integer under 2^24 (so is its float). Every
// float operation is written out: no compiler may contract one shader's and not another's. A lane takes two chunks
// at a time, their loads in flight together; one pipeline serves every batch.
struct Chunk {
    q: array<u32, 8>,             // 32 int8 quants, four to a word
    sa: i32,                      // the integer scales of quants 0..15 and 16..31
    sb: i32,
    d: f32,
    m: f32,                       // the min's float, where HAS_MIN
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;  // a chunk's 32 int8 in two
@group(0) @binding(2) var<storage, read> xd: array<f32>;
@group(0) @binding(3) var<storage, read> xs: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_c: array<f32>;
@group(0) @binding(8) var<uniform> run: Run;

fn exact(ch: Chunk, at: u32) -> i32 {  // the chunk's integer product with int8 chunk `at`
    let lo = xq[2u * at];
    let hi = xq[2u * at + 1u];
    let low = dot4I8Packed(ch.q[0], lo.x) + dot4I8Packed(ch.q[1], lo.y) + dot4I8Packed(ch.q[2], lo.z)
              + dot4I8Packed(ch.q[3], lo.w);
    let high = dot4I8Packed(ch.q[4], hi.x) + dot4I8Packed(ch.q[5], hi.y) + dot4I8Packed(ch.q[6], hi.z)
               + dot4I8Packed(ch.q[7], hi.w);
    return ch.sa * low + ch.sb * high;
}

// acc[j] of the tile's token j gains chunk c's value against that token's int8 chunk
fn add_chunk(acc: ptr<function, array<f32, TILE>>, ch: Chunk, first: u32, count: u32, chunks: u32, c: u32) {
    for (var j = 0u; j < TILE; j++) {
        if (j < count) {
            let at = (first + j) * chunks + c;
            let dx = xd[at];
            var p = fma(ch.d * dx, f32(exact(ch, at)), (*acc)[j]);
            if (HAS_MIN) {
                p = fma(ch.m * dx, f32(xs[at]), p);
            }
            (*acc)[j] = p;
        }
    }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let tile = tile_of(group, groups, t);
    if (tile.count == 0u) {
        return;
    }
    let chunks = K / 32u;
    var acc: array<f32, TILE>;
    if (tile.row < ROWS) {
        let base = tile.row * ROW_WORDS;
        var c = tile.lane;
        for (; c + LANES < chunks; c += 2u * LANES) {  // two chunks' loads in flight, then their sums in order
            let ch = chunk(base, c);
            let next = chunk(base, c + LANES);
            add_chunk(&acc, ch, tile.first, tile.count, chunks, c);
            add_chunk(&acc, next, tile.first, tile.count, chunks, c + LANES);
        }
        if (c < chunks) {
            add_chunk(&acc, chunk(base, c), tile.first, tile.count, chunks, c);
        }
    }
    store_rows(tile, t, acc);
}

// the raw bytes of the weights, little-endian in words
fn byte_at(base: u32, offset: u32) -> u32 {
    return (w[base + (offset >> 2u)] >> ((offset & 3u) * 8u)) & 0xffu;
}

fn as_int8(b: u32) -> i32 {  // a byte as int8
    return bitcast<i32>(b << 24u) >> 24u;
}

fn minus(q: u32, offset: u32) -> u32 {  // offset taken from each of q's four bytes (each under 128), as int8
    return ((q | 0x80808080u) - offset * 0x01010101u) ^ 0x80808080u;
}

fn spread4(x: u32) -> u32 {  // bits 0..3 of x to bit 0 of bytes 0..3
    return (x & 1u) | ((x & 2u) << 7u) | ((x & 4u) << 14u) | ((x & 8u) << 21u);
}

fn unit_chunk(d: f32, m: f32) -> Chunk {
    var ch: Chunk;
    ch.sa = 1;
    ch.sb = 1;
    ch.d = d;
    ch.m = m;
    return ch;
}

// a 32-weight block's 16 bytes of nibbles from word qs (low nibbles weights 0..15), bit i of high the fifth bit of
// weight i (0 for none), less offset
fn nibbles(ch: ptr<function, Chunk>, qs: u32, high: u32, offset: u32) {
    for (var i = 0u; i < 4u; i++) {
        let q = w[qs + i];
        let lo = (q & 0x0f0f0f0fu) | (spread4(high >> (4u * i)) << 4u);
        let hi = ((q >> 4u) & 0x0f0f0f0fu) | (spread4(high >> (16u + 4u * i)) << 4u);
        (*ch).q[i] = minus(lo, offset);
        (*ch).q[4u + i] = minus(hi, offset);
    }
}

// Q4_K, Q5_K: chunk j's 6-bit scale and min from the 12 bytes at byte 4 of the super-block at word b
fn scale_min_k4(b: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(byte_at(b, 4u + j) & 63u, byte_at(b, 8u + j) & 63u);
    }
    return vec2<u32>((byte_at(b, 8u + j) & 15u) | ((byte_at(b, j) >> 6u) << 4u),
                     (byte_at(b, 8u + j) >> 4u) | ((byte_at(b, 4u + j) >> 6u) << 4u));
}

// Q4_K (qh 0: none) and Q5_K: chunk j's low nibbles are the low or high halves (j % 2) of the 8 words at
// qs + 8 (j / 2); Q5_K's fifth bits are bit j of each byte of the 8 words at qh
fn k4_chunk(b: u32, j: u32, qs: u32, qh: u32) -> Chunk {
    let sm = scale_min_k4(b, j);
    let dm = unpack2x16float(w[b]);
    var ch = unit_chunk(dm.x, -(dm.y * f32(sm.y)));
    ch.sa = i32(sm.x);
    ch.sb = i32(sm.x);
    let shift = 4u * (j & 1u);
    for (var i = 0u; i < 8u; i++) {
        var q = (w[b + qs + 8u * (j >> 1u) + i] >> shift) & 0x0f0f0f0fu;
        if (qh != 0u) {
            q |= ((w[b + qh + i] >> j) & 0x01010101u) << 4u;
        }
        ch.q[i] = q;
    }
    return ch;
}
