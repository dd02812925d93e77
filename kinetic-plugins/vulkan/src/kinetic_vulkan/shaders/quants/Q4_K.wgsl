// super-block of 256 (144 bytes): d, dmin (f16), 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit
// values (chunks 2p and 2p + 1 the low and high nibbles of bytes 32p ...); d * scale * q - dmin * min
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 36u;
    let j = c % 8u;
    let scale_min = scale_min_k4(b, j);
    let d = half_at(b, 0u) * f32(scale_min.x);
    let m = half_at(b, 2u) * f32(scale_min.y);
    let shift = (j & 1u) * 4u;
    for (var l = 0u; l < 32u; l++) {
        (*out)[l] = d * f32((byte_at(b, 16u + 32u * (j / 2u) + l) >> shift) & 15u) - m;
    }
}
