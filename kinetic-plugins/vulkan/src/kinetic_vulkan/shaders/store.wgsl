// Each row's keys and values into the block's cache at its position, as float16 pairs: keys, values [context,
// WIDTH / 2] words.
override WIDTH: u32;

@group(0) @binding(0) var<storage, read> k: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> values: array<u32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<uniform> run: Run;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row = group.x;
    if (row >= run.n) {
        return;
    }
    let to = positions[row] * (WIDTH / 2u);
    for (var i = t; i < WIDTH / 2u; i += 64u) {
        let src_at = row * WIDTH + 2u * i;
        keys[to + i] = pack2x16float(vec2<f32>(k[src_at], k[src_at + 1u]));
        values[to + i] = pack2x16float(vec2<f32>(v[src_at], v[src_at + 1u]));
    }
}
