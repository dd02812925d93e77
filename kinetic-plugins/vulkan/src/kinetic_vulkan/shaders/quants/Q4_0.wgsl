// block of 32: d (f16), 16 bytes of two 4-bit values (low nibbles first 16, high nibbles last 16), minus 8;
// padded to 20 bytes (weights.py)
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 5u;
    let d = half_at(b, 0u);
    for (var i = 0u; i < 16u; i++) {
        let q = byte_at(b, 2u + i);
        (*out)[i] = d * f32(i32(q & 15u) - 8);
        (*out)[i + 16u] = d * f32(i32(q >> 4u) - 8);
    }
}
