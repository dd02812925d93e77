// x[r] = row tokens[r] of an embedding matrix of a float type (quants/*.wgsl: dequantize), times SCALE, for the
// pass's rows whose token is in this part (rows FIRST .. FIRST + ROWS); the others are another part's. A workgroup a
// row, a thread a chunk at a time.
override K: u32;                  // the row length
override ROWS: u32;               // rows of this part
override FIRST: u32 = 0u;         // the part's first row in the whole matrix
override SCALE: f32 = 1.0;
override ROW_WORDS: u32;          // words a row takes

const THREADS = 64u;

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<uniform> run: Run;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let r = group.x + group.y * groups.x;
    if (r >= run.n || tokens[r] < FIRST || tokens[r] >= FIRST + ROWS) {
        return;
    }
    var weights: array<f32, 32>;
    for (var c = t; c < K / 32u; c += THREADS) {
        dequantize((tokens[r] - FIRST) * ROW_WORDS, c, &weights);
        for (var i = 0u; i < 32u; i++) {
            x[r * K + 32u * c + i] = weights[i] * SCALE;
        }
    }
}
