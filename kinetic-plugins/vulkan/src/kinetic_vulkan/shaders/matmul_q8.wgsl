// x[t] . w[r] for the pass's tokens t and this part's rows r of a quantized matrix (rows.wgsl), its 32-weight chunks
// (quants/*.wgsl: chunk, from the planes of layout.py) against the tokens' int8 chunks (quantize.wgsl). Lane l's sum,
// from p = 0, over its chunks in order: p = fma(d * dx, exact, p), then p = fma(m * dx, sx, p) where the type has a
// min, where exact = sa * (q[0:16] . x[0:16]) + sb * (q[16:32] . x[16:32]) is an integer under 2^24 (so is its
// float). Every float operation is written out: no compiler may contract one shader's and not another's. A lane
// takes two chunks at a time, their loads in flight together; one pipeline serves every batch.
override CHUNKS = ROWS * (K / 32u);  // the part's chunks; chunk g = row * K / 32 + c

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;  // the part's planes (weights.py)
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;  // a chunk's 32 int8 in two
@group(0) @binding(2) var<storage, read> xd: array<f32>;
@group(0) @binding(3) var<storage, read> xs: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_c: array<f32>;
@group(0) @binding(8) var<uniform> run: Run;

fn dot16(q: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4I8Packed(q.x, x.x) + dot4I8Packed(q.y, x.y) + dot4I8Packed(q.z, x.z) + dot4I8Packed(q.w, x.w);
}

fn exact(ch: Chunk, at: u32) -> i32 {  // the chunk's integer product with int8 chunk `at`
    return ch.sa * dot16(ch.lo, xq[2u * at]) + ch.sb * dot16(ch.hi, xq[2u * at + 1u]);
}

// p gains chunk ch's value against int8 chunk `at`
fn add_chunk(p: f32, ch: Chunk, at: u32) -> f32 {
    let dx = xd[at];
    var q = fma(ch.d * dx, f32(exact(ch, at)), p);
    if (HAS_MIN) {
        q = fma(ch.m * dx, f32(xs[at]), q);
    }
    return q;
}

// acc[j] of the tile's token j gains chunk c's value against that token's int8 chunk
fn add_tile_chunk(acc: ptr<function, array<f32, TILE>>, ch: Chunk, first: u32, count: u32, chunks: u32, c: u32) {
    for (var j = 0u; j < count; j++) {
        (*acc)[j] = add_chunk((*acc)[j], ch, (first + j) * chunks + c);
    }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let tile = tile_of(group, groups, t);
    if (tile.count == 0u) {
        return;
    }
    let chunks = K / 32u;
    var acc: array<f32, TILE>;
    if (tile.row < ROWS && tile.count == 1u) {  // a decode step's: on NVIDIA's driver faster than through acc
        acc[0] = lane_sum(tile.row * chunks, tile.lane, tile.first * chunks, chunks);
    } else if (tile.row < ROWS) {
        let base = tile.row * chunks;
        var c = tile.lane;
        for (; c + LANES < chunks; c += 2u * LANES) {  // two chunks' loads in flight, then their sums in order
            let ch = chunk(base + c);
            let next = chunk(base + c + LANES);
            add_tile_chunk(&acc, ch, tile.first, tile.count, chunks, c);
            add_tile_chunk(&acc, next, tile.first, tile.count, chunks, c + LANES);
        }
        if (c < chunks) {
            add_tile_chunk(&acc, chunk(base + c), tile.first, tile.count, chunks, c);
        }
    }
    store_rows(tile, t, acc);
}

// main's loop for a tile of one token, its sum in a register: the lane's chunks of the row at chunk `base` against
// the token's int8 chunks from `x_at`
fn lane_sum(base: u32, lane: u32, x_at: u32, chunks: u32) -> f32 {
    var p = 0.0;
    var c = lane;
    for (; c + LANES < chunks; c += 2u * LANES) {
        let ch = chunk(base + c);
        let next = chunk(base + c + LANES);
        p = add_chunk(p, ch, x_at + c);
        p = add_chunk(p, next, x_at + c + LANES);
    }
    if (c < chunks) {
        p = add_chunk(p, chunk(base + c), x_at + c);
    }
    return p;
}
