// matmul_q8.wgsl's input in a one-token pass: the workgroup norms the residual row src itself and keeps its int8
// chunks (int8_words.wgsl) in workgroup memory, instead of a norm step before it (x_chunks.wgsl). The bits are
// norm.wgsl's: its 256 threads' sums of squares are these 128 threads' two halves, added as its tree's first level
// adds them, then the same tree; y = src * scale * weight, as there.
override EPS: f32;
const MOST_CHUNKS = 128u;        // K at most 4096 (layers.py)
const NORM_ROUND = 2048u;        // norm.wgsl's ROUND: its 256 threads' eight values

@group(0) @binding(6) var<storage, read> src: array<vec4<f32>>;          // the residual row, K values
@group(0) @binding(7) var<storage, read> norm_weight: array<vec4<f32>>;

var<workgroup> squares: array<f32, THREADS>;
var<workgroup> chunk_q: array<vec4<u32>, 2u * MOST_CHUNKS>;
var<workgroup> chunk_d: array<f32, MOST_CHUNKS>;
var<workgroup> chunk_sum: array<i32, MOST_CHUNKS>;

fn squares_of(v: u32) -> f32 {  // norm.wgsl's thread v's sum: its eight values a round, in order
    var sum = 0.0;
    for (var at = 8u * v; at < K; at += NORM_ROUND) {
        let a = src[at / 4u];
        let b = src[at / 4u + 1u];
        sum = fma(a.x, a.x, sum);
        sum = fma(a.y, a.y, sum);
        sum = fma(a.z, a.z, sum);
        sum = fma(a.w, a.w, sum);
        sum = fma(b.x, b.x, sum);
        sum = fma(b.y, b.y, sum);
        sum = fma(b.z, b.z, sum);
        sum = fma(b.w, b.w, sum);
    }
    return sum;
}

fn normed(c: u32, i: u32, scale: f32) -> vec4<f32> {  // values 4i..4i + 3 of chunk c, normed
    return src[8u * c + i] * scale * norm_weight[8u * c + i];
}

// chunk c of the normed row into workgroup memory; its values are made twice (from L1) rather than kept in a
// function-scope array, which NVIDIA's driver puts in local memory
fn quantize_chunk(c: u32, scale: f32) {
    var peak = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        peak = max(peak, abs(normed(c, i, scale)));
    }
    let amax = max(max(peak.x, peak.y), max(peak.z, peak.w));
    let inverse = inverse_of(amax);
    var sum = 0;
    var lo: vec4<u32>;
    var hi: vec4<u32>;
    for (var i = 0u; i < 4u; i++) {
        lo[i] = quantized_word(normed(c, i, scale), inverse, &sum);
    }
    for (var i = 0u; i < 4u; i++) {
        hi[i] = quantized_word(normed(c, i + 4u, scale), inverse, &sum);
    }
    chunk_q[2u * c] = lo;
    chunk_q[2u * c + 1u] = hi;
    chunk_d[c] = scale_of(amax);
    chunk_sum[c] = sum;
}

fn prepare_x(t: u32) {
    squares[t] = squares_of(t) + squares_of(t + THREADS);
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            squares[t] += squares[t + stride];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(squares[0] / f32(K) + EPS);
    for (var c = t; c < K / 32u; c += THREADS) {
        quantize_chunk(c, scale);
    }
    workgroupBarrier();
}

fn x_lo(at: u32) -> vec4<u32> {
    return chunk_q[2u * at];
}

fn x_hi(at: u32) -> vec4<u32> {
    return chunk_q[2u * at + 1u];
}

fn x_d(at: u32) -> f32 {
    return chunk_d[at];
}

fn x_sum(at: u32) -> i32 {
    return chunk_sum[at];
}
