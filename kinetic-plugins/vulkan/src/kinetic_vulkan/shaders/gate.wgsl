// g = act(gate) * up over the pass's rows, gate and up the halves of a row of gu [rows, 2 WIDTH]: SiLU, or GELU's
// tanh approximation (Hendrycks and Gimpel, 2016); with QUANTIZE, g's rows also as int8 chunks (int8.wgsl) for the
// product that reads them next. A thread eight values (WIDTH is whole chunks, so they share a row).
override WIDTH: u32;
override GELU: bool = false;
override QUANTIZE: bool = false;

@group(0) @binding(0) var<storage, read> gu: array<f32>;
@group(0) @binding(1) var<storage, read_write> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> xq: array<u32>;
@group(0) @binding(3) var<storage, read_write> xd: array<f32>;
@group(0) @binding(4) var<storage, read_write> xs: array<i32>;
@group(0) @binding(5) var<uniform> run: Run;

fn gated(x: f32, up: f32) -> f32 {
    var y: f32;
    if (GELU) {
        // tanh's argument clamped: some drivers' tanh gives NaN far out, where it is 1 in float32 anyway
        y = 0.5 * x * (1.0 + tanh(clamp(0.7978845608 * (x + 0.044715 * x * x * x), -15.0, 15.0)));
    } else {
        y = x / (1.0 + exp(-x));
    }
    return y * up;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let first = ((group.x + group.y * groups.x) * 256u + t) * 8u;
    let holds = first < run.n * WIDTH;
    let at = (first / WIDTH) * 2u * WIDTH + first % WIDTH;  // the first gate value's; up's are WIDTH on
    var e: Eight;
    if (holds) {
        for (var i = 0u; i < 8u; i++) {
            let y = gated(gu[at + i], gu[at + WIDTH + i]);
            g[first + i] = y;
            set_eight(&e, i, y);
        }
    }
    if (QUANTIZE) {
        quantize_eight(e, t, first / 32u, holds);
    }
}
