// super-block of 256 (144 bytes): d, dmin (f16), 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit
// values from word 4 (chunks 2p and 2p + 1 the low and high nibbles of words 8p ...); d * scale * q - dmin * min
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + (c / 8u) * 36u;
    let j = c % 8u;
    let dm = scale_min_k4(b, j);
    let d = dm.x;
    let m = dm.y;
    let shift = (j & 1u) * 4u;
    for (var i = 0u; i < 8u; i++) {
        let q = w[b + 4u + 8u * (j / 2u) + i] >> shift;
        for (var k = 0u; k < 4u; k++) {
            (*out)[4u * i + k] = d * f32((q >> (8u * k)) & 15u) - m;
        }
    }
}
