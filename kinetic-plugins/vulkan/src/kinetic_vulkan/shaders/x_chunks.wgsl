// matmul_q8.wgsl's input: the pass's int8 chunks as a norm, the gate, attention or quantize.wgsl left them (int8.wgsl),
// chunk `at` = token * K / 32 + chunk of the row.
@group(0) @binding(6) var<storage, read> xq: array<vec4<u32>>;  // a chunk's 32 int8 in two
@group(0) @binding(7) var<storage, read> xd: array<f32>;
@group(0) @binding(8) var<storage, read> xs: array<i32>;

fn prepare_x(t: u32) {}

fn x_lo(at: u32) -> vec4<u32> {
    return xq[2u * at];
}

fn x_hi(at: u32) -> vec4<u32> {
    return xq[2u * at + 1u];
}

fn x_d(at: u32) -> f32 {
    return xd[at];
}

fn x_sum(at: u32) -> i32 {
    return xs[at];
}
