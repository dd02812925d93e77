// Attention's splits (attention.wgsl) met, workgroup (head, row): with M the splits' highest peak and w_s =
// exp(peak_s - M), out = (sum of w_s acc_s) / (sum of w_s sum_s), the splits summed in order, a thread a head dim.
// With QUANTIZE (heads of whole 32-value chunks), the output also as int8 chunks (int8.wgsl) for the product that
// reads it next, a thread eight dims.
override HEAD_DIM: u32;
override N_HEAD: u32;
override QUANTIZE: bool = false;

const THREADS = 64u;
const MOST_SPLITS = 64u;          // at least plan.SPLITS

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> stats: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> xq: array<u32>;
@group(0) @binding(5) var<storage, read_write> xd: array<f32>;
@group(0) @binding(6) var<storage, read_write> xs: array<i32>;
@group(0) @binding(7) var<uniform> run: Run;

var<workgroup> last: u32;
var<workgroup> weights: array<f32, MOST_SPLITS>;  // w_s
var<workgroup> total: f32;
var<workgroup> head: array<f32, 256>;              // the output, for QUANTIZE

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row = group.y;
    if (row >= run.n) {
        return;
    }
    let base = (row * N_HEAD + group.x) * SPLITS;
    if (t == 0u) {
        last = positions[row];
    }
    let count = span_of(workgroupUniformLoad(&last)).count;
    var top = bitcast<f32>(0xff800000u);  // -inf
    for (var s = 0u; s < count; s++) {
        top = max(top, stats[2u * (base + s)]);
    }
    if (t < count) {
        weights[t] = exp(stats[2u * (base + t)] - top);
    }
    workgroupBarrier();
    if (t == 0u) {
        var sum = 0.0;
        for (var s = 0u; s < count; s++) {
            sum = fma(stats[2u * (base + s) + 1u], weights[s], sum);
        }
        total = sum;
    }
    workgroupBarrier();
    let out_at = (row * N_HEAD + group.x) * HEAD_DIM;
    for (var d = t; d < HEAD_DIM; d += THREADS) {
        var a = 0.0;
        var s = 0u;
        for (; s + 4u <= count; s += 4u) {  // four splits' loads in flight, then their sums in order
            let p0 = part[(base + s) * HEAD_DIM + d];
            let p1 = part[(base + s + 1u) * HEAD_DIM + d];
            let p2 = part[(base + s + 2u) * HEAD_DIM + d];
            let p3 = part[(base + s + 3u) * HEAD_DIM + d];
            a = fma(p0, weights[s], a);
            a = fma(p1, weights[s + 1u], a);
            a = fma(p2, weights[s + 2u], a);
            a = fma(p3, weights[s + 3u], a);
        }
        for (; s < count; s++) {
            a = fma(part[(base + s) * HEAD_DIM + d], weights[s], a);
        }
        let y = a / total;
        out[out_at + d] = y;
        head[d] = y;
    }
    if (QUANTIZE) {
        workgroupBarrier();  // the head's output, from the other threads
        let first = min(8u * t, HEAD_DIM - 8u);
        let e = Eight(vec4<f32>(head[first], head[first + 1u], head[first + 2u], head[first + 3u]),
                      vec4<f32>(head[first + 4u], head[first + 5u], head[first + 6u], head[first + 7u]));
        quantize_eight(e, t, (out_at + first) / 32u, 8u * t < HEAD_DIM);
    }
}
