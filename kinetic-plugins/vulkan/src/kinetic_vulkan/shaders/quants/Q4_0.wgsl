// block of 32: d (f16), 2 bytes of padding (weights.py), 16 bytes of two 4-bit values (low nibbles the first 16,
// high nibbles the last 16) in words 1 to 4, minus 8
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 5u;
    let d = unpack2x16float(w[b]).x;
    for (var i = 0u; i < 4u; i++) {
        let q = w[b + 1u + i];
        for (var k = 0u; k < 4u; k++) {
            (*out)[4u * i + k] = d * f32(i32((q >> (8u * k)) & 15u) - 8);
            (*out)[16u + 4u * i + k] = d * f32(i32((q >> (8u * k + 4u)) & 15u) - 8);
        }
    }
}
