// x[r] = row tokens[r] of an embedding matrix of a float type (quants/*.wgsl: dequantize), times SCALE, for the
// pass's rows whose token is in this part (embed_rows.wgsl). A workgroup a row, a thread a chunk at a time.
override ROW_WORDS: u32;          // words a row takes

@group(0) @binding(0) var<storage, read> w: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let r = group.x + group.y * groups.x;
    if (!in_part(r)) {
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
