// 32 float16 values a chunk
fn dequantize(base: u32, c: u32, out: ptr<function, array<f32, 32>>) {
    let b = base + c * 16u;
    for (var i = 0u; i < 16u; i++) {
        let pair = unpack2x16float(w[b + i]);
        (*out)[2u * i] = pair.x;
        (*out)[2u * i + 1u] = pair.y;
    }
}
