// Rotary position embedding (Su et al., 2021) in place: each row's HEADS heads turn their first 2 HALF values in
// pairs, (k, k + HALF) as GPT-NeoX does or (2k, 2k + 1), by the row's position's angles (cos and sin tables
// [context, HALF], the rotated values' factor in them: layers.rope_table).
override HEADS: u32;
override HEAD_DIM: u32;
override HALF: u32;
override NEOX: bool;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> cosines: array<f32>;
@group(0) @binding(2) var<storage, read> sines: array<f32>;
@group(0) @binding(3) var<storage, read> positions: array<u32>;
@group(0) @binding(4) var<uniform> run: Run;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row = group.x;
    if (row >= run.n) {
        return;
    }
    let angles = positions[row] * HALF;
    for (var i = t; i < HEADS * HALF; i += 64u) {
        let k = i % HALF;
        let base = row * HEADS * HEAD_DIM + (i / HALF) * HEAD_DIM;
        let first = base + select(2u * k, k, NEOX);
        let second = base + select(2u * k + 1u, k + HALF, NEOX);
        let c = cosines[angles + k];
        let s = sines[angles + k];
        let a = x[first];
        let b = x[second];
        x[first] = a * c - b * s;
        x[second] = a * s + b * c;
    }
}
