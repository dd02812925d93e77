// block of 32: d, m (f16), 16 bytes of two 4-bit values in words 1 to 4; q * d + m
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 5u;
    let dm = unpack2x16float(w[b]);
    for (var i = 0u; i < 4u; i++) {
        let q = w[b + 1u + i];
        for (var k = 0u; k < 4u; k++) {
            (*out)[4u * i + k] = f32((q >> (8u * k)) & 15u) * dm.x + dm.y;
            (*out)[16u + 4u * i + k] = f32((q >> (8u * k + 4u)) & 15u) * dm.x + dm.y;
        }
    }
}
