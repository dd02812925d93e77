// 32 bfloat16 values a chunk: the high half of a float32
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 16u;
    for (var i = 0u; i < 16u; i++) {
        let pair = w[b + i];
        (*out)[2u * i] = bitcast<f32>(pair << 16u);
        (*out)[2u * i + 1u] = bitcast<f32>(pair & 0xffff0000u);
    }
}
