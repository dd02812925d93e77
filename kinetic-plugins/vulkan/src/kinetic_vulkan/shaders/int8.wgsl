// Chunks of 32 values to int8 as ggml's Q8_0 and the CPU and CUDA devices' activations: d = amax / 127 rounded to
// float16 (xd), q = v * (127 / amax) rounded half to even, four to a word (xq), and their integer sum (xs). Thread t
// holds eight values (an Eight), quarter t % 4 of its chunk, whose other quarters threads t - t % 4 on hold: the
// quarters' peaks and sums meet through workgroup memory, and max and integer sums are exact in any order. A shader
// that includes this binds xq, xd and xs, and runs at most QUANTIZING threads a workgroup.
const QUANTIZING = 256u;

struct Eight {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

fn set_eight(e: ptr<function, Eight>, i: u32, y: f32) {  // value i of e
    if (i < 4u) {
        (*e).lo[i] = y;
    } else {
        (*e).hi[i - 4u] = y;
    }
}

var<workgroup> quarter_peak: array<f32, QUANTIZING>;
var<workgroup> quarter_sum: array<i32, QUANTIZING>;

fn quantized_word(v: vec4<f32>, inverse: f32, sum: ptr<function, i32>) -> u32 {
    let q = vec4<i32>(round(v * inverse));
    *sum += q.x + q.y + q.z + q.w;
    return pack4xI8(q);
}

// Every thread of the workgroup calls this (it waits at barriers): those with `holds` hold quarter t % 4 of chunk c.
fn quantize_eight(e: Eight, t: u32, c: u32, holds: bool) {
    let m = max(abs(e.lo), abs(e.hi));
    quarter_peak[t] = max(max(m.x, m.y), max(m.z, m.w));
    workgroupBarrier();
    let first = t & ~3u;
    let amax = max(max(quarter_peak[first], quarter_peak[first + 1u]),
                   max(quarter_peak[first + 2u], quarter_peak[first + 3u]));
    let inverse = select(0.0, 127.0 / amax, amax != 0.0);
    var sum = 0;
    let lo = quantized_word(e.lo, inverse, &sum);
    let hi = quantized_word(e.hi, inverse, &sum);
    if (holds) {
        xq[8u * c + 2u * (t & 3u)] = lo;
        xq[8u * c + 2u * (t & 3u) + 1u] = hi;
    }
    quarter_sum[t] = sum;
    workgroupBarrier();
    if (holds && t == first) {
        xd[c] = unpack2x16float(pack2x16float(vec2<f32>(amax / 127.0, 0.0))).x;
        xs[c] = quarter_sum[first] + quarter_sum[first + 1u] + quarter_sum[first + 2u] + quarter_sum[first + 3u];
    }
    workgroupBarrier();  // the quarters read before a next call writes them
}
