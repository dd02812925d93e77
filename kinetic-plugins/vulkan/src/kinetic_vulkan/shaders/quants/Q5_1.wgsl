// block of 32: d, m (f16), the 32 fifth bits (word 1), 16 bytes of low 4 bits (words 2 to 5); q * d + m
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 6u;
    let dm = unpack2x16float(w[b]);
    let high = w[b + 1u];
    for (var i = 0u; i < 4u; i++) {
        let q = w[b + 2u + i];
        for (var k = 0u; k < 4u; k++) {
            let j = 4u * i + k;
            let low = ((q >> (8u * k)) & 15u) | (((high >> j) << 4u) & 16u);
            let top = ((q >> (8u * k + 4u)) & 15u) | ((high >> (j + 12u)) & 16u);
            (*out)[j] = f32(low) * dm.x + dm.y;
            (*out)[j + 16u] = f32(top) * dm.x + dm.y;
        }
    }
}
