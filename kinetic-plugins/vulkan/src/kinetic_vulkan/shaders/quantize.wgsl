// x [rows, WIDTH] float32 to int8 chunks of 32 (int8.wgsl); a thread eight values.
override WIDTH: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> xq: array<u32>;
@group(0) @binding(2) var<storage, read_write> xd: array<f32>;
@group(0) @binding(3) var<storage, read_write> xs: array<i32>;
@group(0) @binding(4) var<uniform> run: Run;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let first = ((group.x + group.y * groups.x) * 256u + t) * 8u;
    let holds = first < run.n * WIDTH;
    var e: Eight;
    if (holds) {
        e = Eight(vec4<f32>(x[first], x[first + 1u], x[first + 2u], x[first + 3u]),
                  vec4<f32>(x[first + 4u], x[first + 5u], x[first + 6u], x[first + 7u]));
    }
    quantize_eight(e, t, first / 32u, holds);
}
