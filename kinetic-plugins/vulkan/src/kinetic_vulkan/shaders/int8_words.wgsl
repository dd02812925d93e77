// A chunk of 32 values as int8, as ggml's Q8_0 and the CPU and CUDA devices' activations: d = amax / 127 rounded to
// float16, q = v * (127 / amax) rounded half to even, four to a word, and their integer sum.
fn inverse_of(amax: f32) -> f32 {  // what a chunk's values are multiplied by before rounding
    return select(0.0, 127.0 / amax, amax != 0.0);
}

fn scale_of(amax: f32) -> f32 {  // the chunk's d
    return unpack2x16float(pack2x16float(vec2<f32>(amax / 127.0, 0.0))).x;
}

fn quantized_word(v: vec4<f32>, inverse: f32, sum: ptr<function, i32>) -> u32 {  // four values; sum gains theirs
    let q = vec4<i32>(round(v * inverse));
    *sum += q.x + q.y + q.z + q.w;
    return pack4xI8(q);
}
