// block of 32: d, m (f16), 16 bytes of two 4-bit values; q * d + m
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 5u;
    let d = half_at(b, 0u);
    let m = half_at(b, 2u);
    for (var i = 0u; i < 16u; i++) {
        let q = byte_at(b, 4u + i);
        (*out)[i] = f32(q & 15u) * d + m;
        (*out)[i + 16u] = f32(q >> 4u) * d + m;
    }
}
