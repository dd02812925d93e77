// x[r] = row tokens[r] of an embedding matrix of a quantized type, times SCALE, for the pass's rows whose token is in
// this part (embed_rows.wgsl). A weight is (d * s) * q, plus the min where the type has one, as the CPU's dequantize
// writes it. A workgroup a row, a thread a chunk at a time.
override CHUNKS = ROWS * (K / 32u);  // the part's chunks; chunk g = row * K / 32 + c

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;  // the part's planes (weights.py)

fn weight(q: vec4<u32>, i: u32, d: f32, s: i32, m: f32) -> f32 {  // quant i of q's 16, as a weight
    let y = (d * f32(s)) * f32(as_int8(byte_of(q, i)));
    return select(y, y + m, HAS_MIN);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let r = group.x + group.y * groups.x;
    if (!in_part(r)) {
        return;
    }
    let chunks = K / 32u;
    for (var c = t; c < chunks; c += THREADS) {
        let ch = chunk((tokens[r] - FIRST) * chunks + c);
        let at = r * K + 32u * c;
        for (var i = 0u; i < 16u; i++) {
            x[at + i] = weight(ch.lo, i, ch.d, ch.sa, ch.m) * SCALE;
            x[at + 16u + i] = weight(ch.hi, i, ch.d, ch.sb, ch.m) * SCALE;
        }
    }
}
