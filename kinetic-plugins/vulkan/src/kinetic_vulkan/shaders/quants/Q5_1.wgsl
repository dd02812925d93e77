// block of 32: d, m (f16), the 32 fifth bits, 16 bytes of low 4 bits; q * d + m
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 6u;
    let d = half_at(b, 0u);
    let m = half_at(b, 2u);
    let high = w[b + 1u];
    for (var i = 0u; i < 16u; i++) {
        let q = byte_at(b, 8u + i);
        let low = (q & 15u) | (((high >> i) << 4u) & 16u);
        let top = (q >> 4u) | ((high >> (i + 12u)) & 16u);
        (*out)[i] = f32(low) * d + m;
        (*out)[i + 16u] = f32(top) * d + m;
    }
}
