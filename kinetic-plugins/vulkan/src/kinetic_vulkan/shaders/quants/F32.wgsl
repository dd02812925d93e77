// 32 float32 values a chunk
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 32u;
    for (var i = 0u; i < 32u; i++) {
        (*out)[i] = bitcast<f32>(w[b + i]);
    }
}
