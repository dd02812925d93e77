// x[t] . w[r] for the pass's tokens t and this part's rows r of a float matrix (rows.wgsl; quants/*.wgsl:
// dequantize; the quantized types run matmul_q8.wgsl). Lane l's sum: each of its chunks' 32 products in order, added
// to it in order.
override ROW_WORDS: u32;  // words a row takes

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_b: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_c: array<f32>;
@group(0) @binding(6) var<uniform> run: Run;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let tile = tile_of(group, groups, t);
    if (tile.count == 0u) {
        return;
    }
    var acc: array<f32, TILE>;
    if (tile.row < ROWS) {
        var weights: array<f32, 32>;
        let base = tile.row * ROW_WORDS;
        for (var c = tile.lane; c < K / 32u; c += LANES) {
            dequantize(base, c, &weights);
            for (var j = 0u; j < TILE; j++) {  // to TILE, so that acc stays in registers
                if (j < tile.count) {
                    let at = (tile.first + j) * K + c * 32u;
                    var s = 0.0;
                    for (var i = 0u; i < 32u; i++) {
                        s += weights[i] * x[at + i];
                    }
                    acc[j] += s;
                }
            }
        }
    }
    store_rows(tile, t, acc);
}
