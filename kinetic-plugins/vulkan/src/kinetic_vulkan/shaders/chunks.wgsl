// A quantized matrix's 32-weight chunks (quants/*.wgsl: chunk(g), from the planes of layout.py) as the shaders
// that read them take them (matmul_q8.wgsl, embed_q8.wgsl): int8 quants, their integer scales, d and the min. The
// including shader binds the planes as w: array<vec4<u32>> and has the part's CHUNKS.
struct Chunk {
    lo: vec4<u32>,                // int8 quants 0..15, four to a word
    hi: vec4<u32>,                // and 16..31
    sa: i32,                      // the integer scales of quants 0..15 and 16..31
    sb: i32,
    d: f32,
    m: f32,                       // the min's float, where HAS_MIN
}

fn word(i: u32) -> u32 {  // word i of the planes
    return w[i >> 2u][i & 3u];
}

fn half_float(at: u32, i: u32) -> f32 {  // float16 i of the plane at word `at`
    return unpack2x16float(word(at + i / 2u))[i & 1u];
}

fn byte_of(v: vec4<u32>, i: u32) -> u32 {  // byte i of v's 16, little-endian
    return (v[i / 4u] >> (8u * (i % 4u))) & 0xffu;
}

fn as_int8(b: u32) -> i32 {  // a byte as int8
    return bitcast<i32>(b << 24u) >> 24u;
}

fn minus(q: vec4<u32>, offset: u32) -> vec4<u32> {  // offset taken from each byte (each under 128), as int8
    let sign = vec4<u32>(0x80808080u);
    return ((q | sign) - vec4<u32>(offset * 0x01010101u)) ^ sign;
}

fn spread4(x: vec4<u32>) -> vec4<u32> {  // bits 0..3 of each word to bit 0 of its bytes 0..3
    let one = vec4<u32>(1u);
    return (x & one) | ((x & vec4<u32>(2u)) << vec4<u32>(7u)) | ((x & vec4<u32>(4u)) << vec4<u32>(14u))
           | ((x & vec4<u32>(8u)) << vec4<u32>(21u));
}

// a chunk of 16 bytes of nibbles q (layout.py: weight i low, weight 16 + i high) under the bits above them, four
// bytes to a word in place from bit 4 (above_lo for weights 0..15, above_hi for 16..31), less offset; d * q + m
fn quants(q: vec4<u32>, above_lo: vec4<u32>, above_hi: vec4<u32>, offset: u32, d: f32, m: f32) -> Chunk {
    let low4 = vec4<u32>(0x0f0f0f0fu);
    return Chunk(minus((q & low4) | above_lo, offset), minus(((q >> vec4<u32>(4u)) & low4) | above_hi, offset), 1, 1,
                 d, m);
}

// quants() with bit i of high the fifth bit of weight i (0 for none)
fn nibbles(q: vec4<u32>, high: u32, offset: u32, d: f32, m: f32) -> Chunk {
    let fifth = vec4<u32>(high) >> vec4<u32>(0u, 4u, 8u, 12u);
    return quants(q, spread4(fifth) << vec4<u32>(4u), spread4(fifth >> vec4<u32>(16u)) << vec4<u32>(4u), offset, d, m);
}

// Q4_K, Q5_K: chunk j of the super-block whose 16-byte head (d, dmin, 12 bytes of 6-bit scales and mins) is head
fn k4_chunk(head: vec4<u32>, j: u32, q: vec4<u32>, high: u32) -> Chunk {
    var scale = byte_of(head, 4u + j) & 63u;
    var least = byte_of(head, 8u + j) & 63u;  // the min's 6 bits
    if (j >= 4u) {
        scale = (byte_of(head, 8u + j) & 15u) | ((byte_of(head, j) >> 6u) << 4u);
        least = (byte_of(head, 8u + j) >> 4u) | ((byte_of(head, 4u + j) >> 6u) << 4u);
    }
    let dm = unpack2x16float(head.x);
    var ch = nibbles(q, high, 0u, dm.x, -(dm.y * f32(least)));
    ch.sa = i32(scale);
    ch.sb = i32(scale);
    return ch;
}
