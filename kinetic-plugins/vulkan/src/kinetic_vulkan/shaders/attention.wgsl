// Causal attention of each (row, head) over its sequence's cache, the positions the row sees (up to its own, the
// last WINDOW with a sliding window: kinetic.visibility), in tiles of 64 positions from the first it sees, with
// the softmax's running peak and sum carried across tiles (Milakov and Gimelshein, 2018). The order of every sum
// depends on the row's own position alone, so a row's bits never depend on the others in the pass. With QUANTIZE
// (heads of whole 32-value chunks), the output also as int8 chunks (int8.wgsl) for the product that reads it next.
override HEAD_DIM: u32;
override N_HEAD: u32;
override GROUP: u32;              // query heads per key/value head
override KV_WIDTH: u32;           // n_head_kv * HEAD_DIM
override SCALE: f32;
override WINDOW: u32 = 0u;        // 0: none
override QUANTIZE: bool = false;

const THREADS = 64u;
const MOST_DIMS = 4u;             // head dims a thread keeps: heads of up to 256 (support.MAX_HEAD_DIM)

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read_write> xq: array<u32>;
@group(0) @binding(6) var<storage, read_write> xd: array<f32>;
@group(0) @binding(7) var<storage, read_write> xs: array<i32>;
@group(0) @binding(8) var<uniform> run: Run;

var<workgroup> query: array<f32, 256>;
var<workgroup> weights: array<f32, THREADS>;
var<workgroup> partial: array<f32, THREADS>;
var<workgroup> last: u32;

fn value(p: u32, at: u32) -> f32 {  // the cached value at position p, offset at of its row
    let i = p * KV_WIDTH + at;
    let pair = unpack2x16float(values[i / 2u]);
    return select(pair.x, pair.y, (i & 1u) == 1u);
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

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let head = group.x;
    let row = group.y;
    if (row >= run.n) {
        return;
    }
    if (t == 0u) {
        last = positions[row];
    }
    let position = workgroupUniformLoad(&last);
    var first = 0u;
    if (WINDOW > 0u && position + 1u > WINDOW) {
        first = position + 1u - WINDOW;
    }
    let src_at = row * N_HEAD * HEAD_DIM + head * HEAD_DIM;
    for (var d = t; d < HEAD_DIM; d += THREADS) {
        query[d] = q[src_at + d];
    }
    let kv = (head / GROUP) * HEAD_DIM;
    var peak = bitcast<f32>(0xff800000u);  // -inf
    var total = 0.0;
    var acc: array<f32, MOST_DIMS>;
    for (var start = first; start <= position; start += THREADS) {
        let p = start + t;
        var score = bitcast<f32>(0xff800000u);
        workgroupBarrier();
        if (p <= position) {
            let at = (p * KV_WIDTH + kv) / 2u;
            var s = 0.0;
            var d = 0u;
            for (; d + 2u <= HEAD_DIM / 2u; d += 2u) {  // two words' loads in flight
                let k0 = unpack2x16float(keys[at + d]);
                let k1 = unpack2x16float(keys[at + d + 1u]);
                s += query[2u * d] * k0.x;
                s += query[2u * d + 1u] * k0.y;
                s += query[2u * d + 2u] * k1.x;
                s += query[2u * d + 3u] * k1.y;
            }
            if (d < HEAD_DIM / 2u) {
                let key = unpack2x16float(keys[at + d]);
                s += query[2u * d] * key.x;
                s += query[2u * d + 1u] * key.y;
            }
            score = s * SCALE;
        }
        partial[t] = score;
        let new_peak = max(peak, reduce(t, true));
        let factor = exp(peak - new_peak);
        var e = 0.0;
        if (p <= position) {
            e = exp(score - new_peak);
        }
        weights[t] = e;
        partial[t] = e;
        total = total * factor + reduce(t, false);
        let seen = min(THREADS, position + 1u - start);
        for (var i = 0u; i < MOST_DIMS; i++) {
            let d = t + i * THREADS;
            if (d < HEAD_DIM) {
                var a = acc[i] * factor;
                var j = 0u;
                for (; j + 8u <= seen; j += 8u) {  // 8 positions' loads in flight, then their sums in order
                    let v0 = value(start + j, kv + d);
                    let v1 = value(start + j + 1u, kv + d);
                    let v2 = value(start + j + 2u, kv + d);
                    let v3 = value(start + j + 3u, kv + d);
                    let v4 = value(start + j + 4u, kv + d);
                    let v5 = value(start + j + 5u, kv + d);
                    let v6 = value(start + j + 6u, kv + d);
                    let v7 = value(start + j + 7u, kv + d);
                    a += weights[j] * v0;
                    a += weights[j + 1u] * v1;
                    a += weights[j + 2u] * v2;
                    a += weights[j + 3u] * v3;
                    a += weights[j + 4u] * v4;
                    a += weights[j + 5u] * v5;
                    a += weights[j + 6u] * v6;
                    a += weights[j + 7u] * v7;
                }
                for (; j < seen; j++) {  // a row takes the same loops at every batch size: its position decides
                    a += weights[j] * value(start + j, kv + d);
                }
                acc[i] = a;
            }
        }
        peak = new_peak;
    }
    for (var i = 0u; i < MOST_DIMS; i++) {
        let d = t + i * THREADS;
        if (d < HEAD_DIM) {
            out[src_at + d] = acc[i] / total;
        }
    }
    if (QUANTIZE) {
        storageBarrier();  // the head's output, written by other threads
        if (t < HEAD_DIM / 32u) {
            quantize_chunk(src_at / 32u + t);
        }
    }
}

fn chunk_value(c: u32, i: u32) -> f32 {
    return out[32u * c + i];
}
