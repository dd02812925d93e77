// x += y * SCALE over the pass's rows of WIDTH: a block's output joining the residual stream
override WIDTH: u32;
override SCALE: f32 = 1.0;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<uniform> run: Run;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let i = (group.x + group.y * groups.x) * 256u + t;
    if (i < run.n * WIDTH) {
        x[i] += y[i] * SCALE;
    }
}
