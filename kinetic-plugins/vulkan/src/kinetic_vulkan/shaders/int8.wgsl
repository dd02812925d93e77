// Chunks of 32 values to int8 (int8_words.wgsl) in xq, their scales in xd and their integer sums in xs. Thread t
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

// Every thread of the workgroup calls this (it waits at barriers): those with `holds` hold quarter t % 4 of chunk c.
fn quantize_eight(e: Eight, t: u32, c: u32, holds: bool) {
    let m = max(abs(e.lo), abs(e.hi));
    quarter_peak[t] = max(max(m.x, m.y), max(m.z, m.w));
    workgroupBarrier();
    let first = t & ~3u;
    let amax = max(max(quarter_peak[first], quarter_peak[first + 1u]),
                   max(quarter_peak[first + 2u], quarter_peak[first + 3u]));
    let inverse = inverse_of(amax);
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
        xd[c] = scale_of(amax);
        xs[c] = quarter_sum[first] + quarter_sum[first + 1u] + quarter_sum[first + 2u] + quarter_sum[first + 3u];
    }
    workgroupBarrier();  // the quarters read before a next call writes them
}
