// block of 32: d (f16), 32 int8; padded to 36 bytes (weights.py)
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 9u;
    let d = half_at(b, 0u);
    for (var i = 0u; i < 32u; i++) {
        (*out)[i] = d * f32(as_int8(byte_at(b, 2u + i)));
    }
}
