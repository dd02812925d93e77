// super-block of 256 (176 bytes): d, dmin (f16), 12 bytes of 6-bit scales and mins, 32 bytes of fifth bits from
// word 4 (bit j of each byte for chunk j), 128 bytes of low 4 bits from word 12, as Q4_K's; d * scale * q - dmin * min
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 44u;
    let j = c % 8u;
    let dm = scale_min_k4(b, j);
    let d = dm.x;
    let m = dm.y;
    let shift = (j & 1u) * 4u;
    for (var i = 0u; i < 8u; i++) {
        let q = w[b + 12u + 8u * (j / 2u) + i] >> shift;
        let high = w[b + 4u + i] >> j;
        for (var k = 0u; k < 4u; k++) {
            (*out)[4u * i + k] = d * f32(((q >> (8u * k)) & 15u) | (((high >> (8u * k)) & 1u) << 4u)) - m;
        }
    }
}
