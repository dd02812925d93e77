// super-block of 256 (176 bytes): d, dmin (f16), 12 bytes of 6-bit scales and mins, 32 bytes of fifth bits (bit j
// for chunk j), 128 bytes of low 4 bits as Q4_K's; d * scale * q - dmin * min
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 44u;
    let j = c % 8u;
    let scale_min = scale_min_k4(b, j);
    let d = half_at(b, 0u) * f32(scale_min.x);
    let m = half_at(b, 2u) * f32(scale_min.y);
    let shift = (j & 1u) * 4u;
    for (var l = 0u; l < 32u; l++) {
        let low = (byte_at(b, 48u + 32u * (j / 2u) + l) >> shift) & 15u;
        let high = ((byte_at(b, 16u + l) >> j) & 1u) << 4u;
        (*out)[l] = d * f32(low | high) - m;
    }
}
