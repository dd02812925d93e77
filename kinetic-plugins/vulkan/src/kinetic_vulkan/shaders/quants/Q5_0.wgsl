// block of 32: d (f16), 2 bytes of padding (weights.py), the 32 fifth bits (word 1), 16 bytes of low 4 bits
// (words 2 to 5); minus 16
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 6u;
    let d = unpack2x16float(w[b]).x;
    let high = w[b + 1u];
    for (var i = 0u; i < 4u; i++) {
        let q = w[b + 2u + i];
        for (var k = 0u; k < 4u; k++) {
            let j = 4u * i + k;
            let low = ((q >> (8u * k)) & 15u) | (((high >> j) << 4u) & 16u);
            let top = ((q >> (8u * k + 4u)) & 15u) | ((high >> (j + 12u)) & 16u);
            (*out)[j] = f32(i32(low) - 16) * d;
            (*out)[j + 16u] = f32(i32(top) - 16) * d;
        }
    }
}
