// super-block of 256 (210 bytes, padded to 212: weights.py): 128 bytes of low 4 bits, 64 bytes of high 2 bits
// (from word 32), 16 int8 scales (from byte 192), d (f16, word 52). Chunk j = 4 part + r of a super-block: the low
// (r < 2) or high nibbles of the 8 words at 16 part + 8 (r & 1), bits 2r of the 8 words at 32 + 8 part, the scales
// of its halves at 8 part + 2r and + 1; d * scale * (q - 32)
const HAS_MIN = false;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + (c / 8u) * 53u;
    let part = (c % 8u) / 4u;
    let r = c % 4u;
    var ch = unit_chunk(unpack2x16float(w[b + 52u]).x, 0.0);
    ch.sa = as_int8(byte_at(b, 192u + 8u * part + 2u * r));
    ch.sb = as_int8(byte_at(b, 193u + 8u * part + 2u * r));
    for (var i = 0u; i < 8u; i++) {
        let low = (w[b + 16u * part + 8u * (r & 1u) + i] >> (4u * (r >> 1u))) & 0x0f0f0f0fu;
        let high = (w[b + 32u + 8u * part + i] >> (2u * r)) & 0x03030303u;
        ch.q[i] = minus(low | (high << 4u), 32u);
    }
    return ch;
}
