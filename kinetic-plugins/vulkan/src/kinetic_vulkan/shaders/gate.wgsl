// g = act(g) * u over the pass's rows of WIDTH: SiLU, or GELU's tanh approximation (Hendrycks and Gimpel, 2016)
override WIDTH: u32;
override GELU: bool = false;

@group(0) @binding(0) var<storage, read_write> g: array<f32>;
@group(0) @binding(1) var<storage, read> u: array<f32>;
@group(0) @binding(2) var<uniform> run: Run;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let i = (group.x + group.y * groups.x) * 256u + t;
    if (i >= run.n * WIDTH) {
        return;
    }
    let x = g[i];
    var y: f32;
    if (GELU) {
        // tanh's argument clamped: some drivers' tanh gives NaN far out, where it is 1 in float32 anyway
        y = 0.5 * x * (1.0 + tanh(clamp(0.7978845608 * (x + 0.044715 * x * x * x), -15.0, 15.0)));
    } else {
        y = x / (1.0 + exp(-x));
    }
    g[i] = y * u[i];
}
