// RMS norm (Zhang and Sennrich, 2019) of pieces of WIDTH values: dst[p] = src[p] / sqrt(mean(src[p]^2) + EPS) *
// weight, PIECES of them a row (a head norm's pieces are heads); with GATHER, of the rows the pass's logits ask for;
// with QUANTIZE, dst's rows also as int8 chunks (int8.wgsl) for the products that read them next.
// A workgroup takes one piece, a thread eight values at a time; the threads' sums of squares meet in a fixed tree.
override WIDTH: u32;
override EPS: f32;
override PIECES: u32 = 1u;
override GATHER: bool = false;
override QUANTIZE: bool = false;  // (PIECES = 1, WIDTH whole chunks)

const THREADS = 256u;
const ROUND = 8u * THREADS;       // values the workgroup takes at a time

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> logit_rows: array<u32>;
@group(0) @binding(4) var<storage, read_write> xq: array<u32>;
@group(0) @binding(5) var<storage, read_write> xd: array<f32>;
@group(0) @binding(6) var<storage, read_write> xs: array<i32>;
@group(0) @binding(7) var<uniform> run: Run;

var<workgroup> partial: array<f32, THREADS>;

fn source(at: u32, i: u32) -> f32 {  // value i of the piece from src offset at, 0 past its end
    return select(0.0, src[at + min(i, WIDTH - 1u)], i < WIDTH);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let piece = group.x + group.y * groups.x;
    if (piece >= select(run.n, run.n_logits, GATHER) * PIECES) {
        return;
    }
    var src_at = piece * WIDTH;
    if (GATHER) {
        src_at = (logit_rows[piece / PIECES] * PIECES + piece % PIECES) * WIDTH;
    }
    var sum = 0.0;
    for (var at = 8u * t; at < WIDTH; at += ROUND) {
        for (var i = 0u; i < 8u; i++) {
            let v = source(src_at, at + i);
            sum = fma(v, v, sum);
        }
    }
    partial[t] = sum;
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            partial[t] += partial[t + stride];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(partial[0] / f32(WIDTH) + EPS);
    for (var first = 0u; first < WIDTH; first += ROUND) {  // the same rounds for every thread: quantize waits
        let at = first + 8u * t;
        var e: Eight;
        for (var i = 0u; i < 8u; i++) {
            let y = source(src_at, at + i) * scale * select(0.0, weight[min(at + i, WIDTH - 1u)], at + i < WIDTH);
            if (at + i < WIDTH) {
                dst[piece * WIDTH + at + i] = y;
            }
            set_eight(&e, i, y);
        }
        if (QUANTIZE) {
            quantize_eight(e, t, (piece * WIDTH + at) / 32u, at < WIDTH);
        }
    }
}
