// Causal attention split along the positions (Dao et al., 2023, Flash-Decoding): workgroup (head, split, row) takes
// split `split` of the positions the row sees (splits.wgsl) in tiles of THREADS, a thread a position's score, the
// softmax's running peak carried across tiles (Milakov and Gimelshein, 2018), and leaves its peak, its sum of
// exponentials and its unnormalized output for combine.wgsl. How a row's positions split and the order of every sum
// depend on the row's own position alone, so a row's bits never depend on the others in the pass.
override HEAD_DIM: u32;
override N_HEAD: u32;
override GROUP: u32;              // query heads per key/value head
override KV_WIDTH: u32;           // n_head_kv * HEAD_DIM
override SCALE: f32;

const THREADS = SPAN_TILE;
const MOST_DIMS = 4u;             // head dims a thread keeps: heads of up to 256 (support.MAX_HEAD_DIM)

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> keys: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> positions: array<u32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;   // [rows, N_HEAD, SPLITS, HEAD_DIM]
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;  // [rows, N_HEAD, SPLITS, 2]: peak, sum
@group(0) @binding(6) var<uniform> run: Run;

var<workgroup> query: array<f32, 256>;
var<workgroup> weights: array<f32, THREADS>;
var<workgroup> partial: array<f32, THREADS>;
var<workgroup> last: u32;

fn value(p: u32, at: u32) -> f32 {  // the cached value at position p, offset at of its row
    let i = p * KV_WIDTH + at;
    let pair = unpack2x16float(values[i / 2u]);
    return select(pair.x, pair.y, (i & 1u) == 1u);
}

fn score(p: u32, kv: u32) -> f32 {  // the query's product with the key at position p, times SCALE
    let at = (p * KV_WIDTH + kv) / 2u;  // its first word
    var s = 0.0;
    if (KV_WIDTH % 8u == 0u && HEAD_DIM % 8u == 0u) {  // whole four-word loads, all in flight
        for (var d = 0u; d < HEAD_DIM / 8u; d++) {
            let k = keys[at / 4u + d];
            let k0 = unpack2x16float(k.x);
            let k1 = unpack2x16float(k.y);
            let k2 = unpack2x16float(k.z);
            let k3 = unpack2x16float(k.w);
            s = fma(query[8u * d], k0.x, s);
            s = fma(query[8u * d + 1u], k0.y, s);
            s = fma(query[8u * d + 2u], k1.x, s);
            s = fma(query[8u * d + 3u], k1.y, s);
            s = fma(query[8u * d + 4u], k2.x, s);
            s = fma(query[8u * d + 5u], k2.y, s);
            s = fma(query[8u * d + 6u], k3.x, s);
            s = fma(query[8u * d + 7u], k3.y, s);
        }
    } else {
        for (var d = 0u; d < HEAD_DIM / 2u; d++) {
            let key = unpack2x16float(keys[(at + d) / 4u][(at + d) % 4u]);
            s = fma(query[2u * d], key.x, s);
            s = fma(query[2u * d + 1u], key.y, s);
        }
    }
    return s * SCALE;
}

fn reduce(t: u32, is_max: bool) -> f32 {  // partial's THREADS values folded in a fixed tree
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            partial[t] = select(partial[t] + partial[t + stride], max(partial[t], partial[t + stride]), is_max);
        }
        workgroupBarrier();
    }
    let folded = partial[0];
    workgroupBarrier();
    return folded;
}

fn add_eight(acc: f32, start: u32, j: u32, at: u32) -> f32 {  // 8 positions' loads in flight, then their sums in order
    let v0 = value(start + j, at);
    let v1 = value(start + j + 1u, at);
    let v2 = value(start + j + 2u, at);
    let v3 = value(start + j + 3u, at);
    let v4 = value(start + j + 4u, at);
    let v5 = value(start + j + 5u, at);
    let v6 = value(start + j + 6u, at);
    let v7 = value(start + j + 7u, at);
    var a = fma(weights[j], v0, acc);
    a = fma(weights[j + 1u], v1, a);
    a = fma(weights[j + 2u], v2, a);
    a = fma(weights[j + 3u], v3, a);
    a = fma(weights[j + 4u], v4, a);
    a = fma(weights[j + 5u], v5, a);
    a = fma(weights[j + 6u], v6, a);
    return fma(weights[j + 7u], v7, a);
}

// acc of head dim d gains the tile's seen positions from start, weighted
fn add_values(acc: f32, start: u32, seen: u32, at: u32) -> f32 {
    var a = acc;
    if (seen == THREADS) {  // a whole tile: a constant count, so the compiler may unroll it
        for (var j = 0u; j < THREADS; j += 8u) {
            a = add_eight(a, start, j, at);
        }
        return a;
    }
    var j = 0u;
    for (; j + 8u <= seen; j += 8u) {
        a = add_eight(a, start, j, at);
    }
    for (; j < seen; j++) {
        a = fma(weights[j], value(start + j, at), a);
    }
    return a;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let head = group.x;
    let split = group.y;
    let row = group.z;
    if (row >= run.n) {
        return;
    }
    if (t == 0u) {
        last = positions[row];
    }
    let position = workgroupUniformLoad(&last);
    let span = span_of(position);
    if (split >= span.count) {
        return;
    }
    let begin = span.first + split * span.piece;
    let end = min(begin + span.piece, position + 1u);
    let q_at = row * N_HEAD * HEAD_DIM + head * HEAD_DIM;
    for (var d = t; d < HEAD_DIM; d += THREADS) {
        query[d] = q[q_at + d];
    }
    let kv = (head / GROUP) * HEAD_DIM;
    var peak = bitcast<f32>(0xff800000u);  // -inf
    var sum = 0.0;  // this thread's positions' exponentials
    var acc: array<f32, MOST_DIMS>;
    for (var start = begin; start < end; start += THREADS) {
        let p = start + t;
        workgroupBarrier();  // the query stored; the last tile's weights read
        var s = bitcast<f32>(0xff800000u);
        if (p < end) {
            s = score(p, kv);
        }
        partial[t] = s;
        let new_peak = max(peak, reduce(t, true));
        let factor = exp(peak - new_peak);
        var e = 0.0;
        if (p < end) {
            e = exp(s - new_peak);
        }
        weights[t] = e;
        sum = fma(sum, factor, e);
        workgroupBarrier();  // the tile's weights
        let seen = min(THREADS, end - start);
        for (var i = 0u; i < MOST_DIMS; i++) {
            let d = t + i * THREADS;
            if (d < HEAD_DIM) {
                acc[i] = add_values(acc[i] * factor, start, seen, kv + d);
            }
        }
        peak = new_peak;
    }
    partial[t] = sum;
    let total = reduce(t, false);
    let at = (row * N_HEAD + head) * SPLITS + split;
    for (var i = 0u; i < MOST_DIMS; i++) {
        let d = t + i * THREADS;
        if (d < HEAD_DIM) {
            part[at * HEAD_DIM + d] = acc[i];
        }
    }
    if (t == 0u) {
        stats[2u * at] = peak;
        stats[2u * at + 1u] = total;
    }
}
