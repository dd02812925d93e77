// block of 32: d (f16), 2 bytes of padding (weights.py), 32 int8 in words 1 to 8
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 9u;
    let d = unpack2x16float(w[b]).x;
    for (var i = 0u; i < 8u; i++) {
        let q = bitcast<i32>(w[b + 1u + i]);
        for (var k = 0u; k < 4u; k++) {
            (*out)[4u * i + k] = d * f32(extractBits(q, 8u * k, 8u));
        }
    }
}
