// super-block of 256 (210 bytes, padded to 212: weights.py): 128 bytes of low 4 bits, 64 bytes of high 2 bits,
// 16 int8 scales, d (f16). Chunk c = 4 part + r (part: its 128 values): low nibbles (r < 2) or high (r >= 2) of ql[64 part + 32 (r & 1)
// + l], bits 2r of qh[32 part + l], scale 8 part + l / 16 + 2r; d * scale * (q - 32)
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 53u;
    let part = (c % 8u) / 4u;
    let r = c % 4u;
    let d = half_at(b, 208u);
    for (var l = 0u; l < 32u; l++) {
        let low = (byte_at(b, 64u * part + 32u * (r & 1u) + l) >> ((r >> 1u) * 4u)) & 15u;
        let high = (byte_at(b, 128u + 32u * part + l) >> (2u * r)) & 3u;
        let scale = as_int8(byte_at(b, 192u + 8u * part + l / 16u + 2u * r));
        (*out)[l] = d * f32(scale) * f32(i32(low | (high << 4u)) - 32);
    }
}
