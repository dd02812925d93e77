// Attention's splits (attention.wgsl) met, workgroup (head, row), a thread eight dims: with M the splits' highest peak and w_s =
// exp(peak_s - M), out = (sum of w_s acc_s) / (sum of w_s sum_s), the splits summed in order. With QUANTIZE (heads of
// whole 32-value chunks), the output also as int8 chunks (int8.wgsl) for the product that reads it next.
override HEAD_DIM: u32;
override N_HEAD: u32;
override QUANTIZE: bool = false;

const THREADS = 64u;

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> stats: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> xq: array<u32>;
@group(0) @binding(5) var<storage, read_write> xd: array<f32>;
@group(0) @binding(6) var<storage, read_write> xs: array<i32>;
@group(0) @binding(7) var<uniform> run: Run;

var<workgroup> last: u32;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let head = group.x;
    let row = group.y;
    if (row >= run.n) {
        return;
    }
    if (t == 0u) {
        last = positions[row];
    }
    let count = span_of(workgroupUniformLoad(&last)).count;
    let base = (row * N_HEAD + head) * SPLITS;
    var top = bitcast<f32>(0xff800000u);  // -inf
    for (var s = 0u; s < count; s++) {
        top = max(top, stats[2u * (base + s)]);
    }
    var total = 0.0;
    for (var s = 0u; s < count; s++) {
        total = fma(stats[2u * (base + s) + 1u], exp(stats[2u * (base + s)] - top), total);
    }
    let out_at = row * N_HEAD * HEAD_DIM + head * HEAD_DIM;
    let first = 8u * t;  // the thread's eight dims
    let holds = first < HEAD_DIM;
    var e: Eight;
    if (holds) {
        for (var i = 0u; i < 8u; i++) {
            let d = min(first + i, HEAD_DIM - 1u);
            var a = 0.0;
            for (var s = 0u; s < count; s++) {
                a = fma(part[(base + s) * HEAD_DIM + d], exp(stats[2u * (base + s)] - top), a);
            }
            let y = a / total;
            if (first + i < HEAD_DIM) {
                out[out_at + d] = y;
            }
            if (i < 4u) {
                e.lo[i] = y;
            } else {
                e.hi[i - 4u] = y;
            }
        }
    }
    if (QUANTIZE) {
        quantize_eight(e, t, (out_at + first) / 32u, holds);
    }
}
