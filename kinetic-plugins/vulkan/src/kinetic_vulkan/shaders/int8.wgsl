
// Chunk c of 32 values, chunk_value(c, i) for i < 32 (a function of the shader that includes this, which must give
// the same bits every call), to int8 as ggml's Q8_0 and the CPU and CUDA devices' activations: d = amax / 127
// rounded to float16 (xd), q = v * (127 / amax) rounded half to even, four to a word (xq), and their integer sum
// (xs). The values are asked for twice rather than kept in an array, which a driver may put in slow local memory.
// A shader that includes this binds xq, xd and xs.
fn quantize_chunk(c: u32) {
    var amax = 0.0;
    for (var i = 0u; i < 32u; i++) {
        amax = max(amax, abs(chunk_value(c, i)));
    }
    let inverse = select(0.0, 127.0 / amax, amax != 0.0);
    var sum = 0;
    for (var i = 0u; i < 8u; i++) {
        var word = 0u;
        for (var k = 0u; k < 4u; k++) {
            let q = i32(round(chunk_value(c, 4u * i + k) * inverse));
            sum += q;
            word |= (bitcast<u32>(q) & 0xffu) << (8u * k);
        }
        xq[8u * c + i] = word;
    }
    xd[c] = unpack2x16float(pack2x16float(vec2<f32>(amax / 127.0, 0.0))).x;
    xs[c] = sum;
}
