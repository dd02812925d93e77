// RMS norm (Zhang and Sennrich, 2019) of pieces of WIDTH values: dst[p] = src[p] / sqrt(mean(src[p]^2) + EPS) *
// weight, PIECES of them a row (a head norm's pieces are heads); with GATHER, of the rows the pass's logits ask for;
// with QUANTIZE, dst's rows also as int8 chunks (int8.wgsl) for the products that read them next.
// A workgroup takes one piece; its threads' sums of squares meet in a fixed tree.
override WIDTH: u32;
override EPS: f32;
override PIECES: u32 = 1u;
override GATHER: bool = false;
override QUANTIZE: bool = false;  // (PIECES = 1)

const THREADS = 256u;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> logit_rows: array<u32>;
@group(0) @binding(4) var<storage, read_write> xq: array<u32>;
@group(0) @binding(5) var<storage, read_write> xd: array<f32>;
@group(0) @binding(6) var<storage, read_write> xs: array<i32>;
@group(0) @binding(7) var<uniform> run: Run;

var<workgroup> partial: array<f32, THREADS>;

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
    for (var i = t; i < WIDTH; i += THREADS) {
        let v = src[src_at + i];
        sum += v * v;
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
    for (var i = t; i < WIDTH; i += THREADS) {
        dst[piece * WIDTH + i] = src[src_at + i] * scale * weight[i];
    }
    if (QUANTIZE) {
        storageBarrier();  // dst's values, written by the other threads
        for (var c = t; c < WIDTH / 32u; c += THREADS) {  // a thread a chunk
            quantize_chunk(piece * (WIDTH / 32u) + c);
        }
    }
}

fn chunk_value(c: u32, i: u32) -> f32 {
    return dst[32u * c + i];
}
