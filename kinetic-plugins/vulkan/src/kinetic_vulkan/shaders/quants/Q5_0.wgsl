// block of 32: d (f16), the 32 fifth bits, 16 bytes of low 4 bits; minus 16; padded to 24 bytes (weights.py)
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 6u;
    let d = half_at(b, 0u);
    let high = byte_at(b, 2u) | (byte_at(b, 3u) << 8u) | (byte_at(b, 4u) << 16u) | (byte_at(b, 5u) << 24u);
    for (var i = 0u; i < 16u; i++) {
        let q = byte_at(b, 6u + i);
        let low = (q & 15u) | (((high >> i) << 4u) & 16u);
        let top = (q >> 4u) | ((high >> (i + 12u)) & 16u);
        (*out)[i] = f32(i32(low) - 16) * d;
        (*out)[i + 16u] = f32(i32(top) - 16) * d;
    }
}
