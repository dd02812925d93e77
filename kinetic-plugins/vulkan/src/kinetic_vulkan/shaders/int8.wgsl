
// Chunk c of 32 values to int8, as ggml's Q8_0 and the CPU and CUDA devices' activations: d = amax / 127 rounded
// to float16 (xd), q = v * (127 / amax) rounded half to even, four to a word (xq), and their integer sum (xs).
// A shader that includes this binds xq, xd and xs.
fn quantize_chunk(c: u32, v: ptr<function, array<f32, 32>>) {
    var amax = 0.0;
    for (var i = 0u; i < 32u; i++) {
        amax = max(amax, abs((*v)[i]));
    }
    let inverse = select(0.0, 127.0 / amax, amax != 0.0);
    var sum = 0;
    for (var i = 0u; i < 8u; i++) {
        var word = 0u;
        for (var k = 0u; k < 4u; k++) {
            let q = i32(round((*v)[4u * i + k] * inverse));
            sum += q;
            word |= (bitcast<u32>(q) & 0xffu) << (8u * k);
        }
        xq[8u * c + i] = word;
    }
    xd[c] = unpack2x16float(pack2x16float(vec2<f32>(amax / 127.0, 0.0))).x;
    xs[c] = sum;
}
