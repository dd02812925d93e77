// out[t, OUT_OFFSET + OFFSET + r] = (x[t] . w[r] + bias[OFFSET + r]) * SCALE (+ that) for the pass's tokens t and
// this part's rows r of a float matrix (quants/*.wgsl: dequantize; the quantized types run matmul_q8.wgsl).
// A workgroup takes ROWS_A_GROUP rows and up to TILE tokens, LANES threads a row. Each thread sums whole chunks of
// 32 weights, a chunk's products in order, and a row's LANES sums meet in a fixed tree: a token's bits never depend
// on the other tokens.
override K: u32;                  // the row length
override ROWS: u32;               // rows of this part
override ROW_WORDS: u32;          // words a row takes
override X_STRIDE: u32;
override OUT_STRIDE: u32;
override OUT_OFFSET: u32 = 0u;    // the matrix's first column in out
override OFFSET: u32 = 0u;        // the part's first row in the whole matrix
override SCALE: f32 = 1.0;
override ACCUMULATE: bool = false;
override BIAS: bool = false;
override LOGITS: bool = false;    // the rows are the pass's n_logits rows, not its n

const LANES = 8u;
const ROWS_A_GROUP = 8u;          // 64 threads
const TILE = 8u;

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<uniform> run: Run;

var<workgroup> partial: array<f32, 512>;  // [ROWS_A_GROUP, TILE, LANES]

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let first = group.z * TILE;
    let n = select(run.n, run.n_logits, LOGITS);
    if (first >= n) {
        return;
    }
    let count = min(TILE, n - first);
    let row = (group.x + group.y * groups.x) * ROWS_A_GROUP + t / LANES;
    let lane = t % LANES;
    var acc: array<f32, TILE>;
    if (row < ROWS) {
        var weights: array<f32, 32>;
        let base = row * ROW_WORDS;
        for (var c = lane; c < K / 32u; c += LANES) {
            dequantize(base, c, &weights);
            for (var j = 0u; j < count; j++) {
                let at = (first + j) * X_STRIDE + c * 32u;
                var s = 0.0;
                for (var i = 0u; i < 32u; i++) {
                    s += weights[i] * x[at + i];
                }
                acc[j] += s;
            }
        }
    }
    let mine = (t / LANES) * TILE * LANES;  // this row's [TILE, LANES] of partial
    for (var j = 0u; j < TILE; j++) {
        partial[mine + j * LANES + lane] = acc[j];
    }
    workgroupBarrier();
    for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
        if (lane < stride) {
            for (var j = 0u; j < count; j++) {
                partial[mine + j * LANES + lane] += partial[mine + j * LANES + lane + stride];
            }
        }
        workgroupBarrier();
    }
    if (row < ROWS && lane < count) {
        let at = (first + lane) * OUT_STRIDE + OUT_OFFSET + OFFSET + row;
        var y = partial[mine + lane * LANES];
        if (BIAS) {
            y += bias[OFFSET + row];
        }
        y *= SCALE;
        if (ACCUMULATE) {
            y += out[at];
        }
        out[at] = y;
    }
}
