// planes (layout.py): 16 bytes of the low four bits a chunk; each chunk's high two bits in two words (word a, byte b
// holds weight 16 a + 4 k + b's at bits 2k); two int8 scales a chunk (its halves'); each super-block's d (f16);
// d * scale * (q - 32). CHUNKS is a multiple of 8, so every plane starts on a four-word load.
const HAS_MIN = false;
override SCALES_AT = 6u * CHUNKS;
override D_AT = SCALES_AT + CHUNKS / 2u;
fn chunk(g: u32) -> Chunk {
    let q = w[g];
    let pair = w[CHUNKS + g / 2u];
    let crumbs = select(pair.xy, pair.zw, (g & 1u) == 1u);
    let shifts = vec4<u32>(0u, 2u, 4u, 6u);
    let two = vec4<u32>(0x03030303u);
    var ch = quants(q, ((vec4<u32>(crumbs.x) >> shifts) & two) << vec4<u32>(4u),
                    ((vec4<u32>(crumbs.y) >> shifts) & two) << vec4<u32>(4u), 32u, half_float(D_AT, g / 8u), 0.0);
    let scales = word(SCALES_AT + g / 2u) >> (16u * (g & 1u));
    ch.sa = as_int8(scales & 0xffu);
    ch.sb = as_int8((scales >> 8u) & 0xffu);
    return ch;
}
