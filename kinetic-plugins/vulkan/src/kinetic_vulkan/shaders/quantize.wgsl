// x [rows, WIDTH] float32 to int8 chunks of 32 (int8.wgsl); a thread a chunk.
override WIDTH: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> xq: array<u32>;
@group(0) @binding(2) var<storage, read_write> xd: array<f32>;
@group(0) @binding(3) var<storage, read_write> xs: array<i32>;
@group(0) @binding(4) var<uniform> run: Run;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let c = (group.x + group.y * groups.x) * 64u + t;
    if (c >= run.n * (WIDTH / 32u)) {
        return;
    }
    quantize_chunk(c);
}

fn chunk_value(c: u32, i: u32) -> f32 {
    return x[32u * c + i];
}
