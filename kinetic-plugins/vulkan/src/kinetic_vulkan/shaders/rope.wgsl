// Rotary position embedding (Su et al., 2021) in place: each row's Q_HEADS query heads (q) and K_HEADS key heads (k)
// turn their first 2 HALF values in pairs, (j, j + HALF) as GPT-NeoX does or (2j, 2j + 1), by the row's position's
// angles (cos and sin tables [context, HALF], the rotated values' factor in them: layers.Uploads.table). With STORE,
// the row's keys and values (v) then go into the block's cache at its position as float16 pairs, as store.wgsl
// writes them. Workgroup 0 of a row turns its keys (and stores), the others a query pair a thread.
override Q_HEADS: u32;
override K_HEADS: u32;
override HEAD_DIM: u32;
override HALF: u32;
override NEOX: bool;
override STORE: bool = false;

@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read> cosines: array<f32>;
@group(0) @binding(3) var<storage, read> sines: array<f32>;
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read_write> keys: array<u32>;
@group(0) @binding(7) var<storage, read_write> values: array<u32>;
@group(0) @binding(8) var<uniform> run: Run;

fn pair(base: u32, j: u32) -> vec2<u32> {  // where the values that turn by angle j are
    return vec2<u32>(base + select(2u * j, j, NEOX), base + select(2u * j + 1u, j + HALF, NEOX));
}

fn turned(a: f32, b: f32, c: f32, s: f32) -> vec2<f32> {
    return vec2<f32>(a * c - b * s, a * s + b * c);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row = group.y;
    if (row >= run.n) {
        return;
    }
    let position = positions[row];
    if (group.x > 0u) {  // a pair of the query heads a thread
        let i = (group.x - 1u) * 256u + t;
        if (i < Q_HEADS * HALF) {
            let j = i % HALF;
            let at = pair((row * Q_HEADS + i / HALF) * HEAD_DIM, j);
            let y = turned(q[at.x], q[at.y], cosines[position * HALF + j], sines[position * HALF + j]);
            q[at.x] = y.x;
            q[at.y] = y.y;
        }
        return;
    }
    for (var i = t; i < K_HEADS * HALF; i += 256u) {  // workgroup 0: the key heads
        let j = i % HALF;
        let at = pair((row * K_HEADS + i / HALF) * HEAD_DIM, j);
        let y = turned(k[at.x], k[at.y], cosines[position * HALF + j], sines[position * HALF + j]);
        k[at.x] = y.x;
        k[at.y] = y.y;
    }
    if (STORE) {
        storageBarrier();  // the row's turned keys, written by other threads
        let width = K_HEADS * HEAD_DIM;
        for (var i = t; i < width / 2u; i += 256u) {
            let at = row * width + 2u * i;
            keys[position * (width / 2u) + i] = pack2x16float(vec2<f32>(k[at], k[at + 1u]));
            values[position * (width / 2u) + i] = pack2x16float(vec2<f32>(v[at], v[at + 1u]));
        }
    }
}
