// super-block of 256 (210 bytes, padded to 212: weights.py): 128 bytes of low 4 bits, 64 bytes of high 2 bits
// (from word 32), 16 int8 scales (from byte 192), d (f16, word 52). Chunk c = 4 part + r (part: its 128 values):
// the low nibbles (r < 2) or high (r >= 2) of ql[64 part + 32 (r & 1) + l], bits 2r of qh[32 part + l], scale
// 8 part + l / 16 + 2r; d * scale * (q - 32)
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 53u;
    let part = (c % 8u) / 4u;
    let r = c % 4u;
    let d = unpack2x16float(w[b + 52u]).x;
    for (var i = 0u; i < 8u; i++) {
        let low = w[b + 16u * part + 8u * (r & 1u) + i] >> ((r >> 1u) * 4u);
        let high = w[b + 32u + 8u * part + i] >> (2u * r);
        let scale = f32(as_int8(byte_at(b, 192u + 8u * part + (4u * i) / 16u + 2u * r)));
        for (var k = 0u; k < 4u; k++) {
            let q = ((low >> (8u * k)) & 15u) | (((high >> (8u * k)) & 3u) << 4u);
            (*out)[4u * i + k] = d * scale * f32(i32(q) - 32);
        }
    }
}
