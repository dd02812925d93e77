
// What both matrix products share (matmul.wgsl, matmul_q8.wgsl): a workgroup takes THREADS / LANES rows of this part
// of the matrix and up to TILE of the pass's tokens, LANES threads a row, lane l summing chunks l, l + LANES, ...;
// then the lanes' sums meet in a fixed tree (stride LANES / 2 first) and out[t, OUT_OFFSET + OFFSET + r] gets
// (sum + bias[OFFSET + r]) * SCALE, fma'd onto what it holds with ACCUMULATE; a stacked matrix's (weights.stackable)
// rows from SECOND, and from THIRD, go to out_b and out_c instead. A row's order depends on K alone, so a token's bits
// never depend on the other tokens. The including shader binds out, bias, out_b and out_c.
override K: u32;                  // the row length
override ROWS: u32;               // rows of this part
override OUT_STRIDE: u32;
override OUT_OFFSET: u32 = 0u;    // the matrix's first column in out
override OFFSET: u32 = 0u;        // the part's first row in the whole matrix
override SCALE: f32 = 1.0;
override ACCUMULATE: bool = false;
override BIAS: bool = false;
override LOGITS: bool = false;    // the rows are the pass's n_logits rows, not its n
override LANES: u32 = 32u;        // threads a row: a power of two up to 32
override SECOND: u32 = 0xffffffffu;  // the whole matrix's first row of out_b's [n, STRIDE_B] (none by default)
override THIRD: u32 = 0xffffffffu;   // and of out_c's [n, STRIDE_C]
override STRIDE_B: u32 = 0u;
override STRIDE_C: u32 = 0u;

const THREADS = 128u;
const TILE = 8u;

var<workgroup> partial: array<f32, 1024>;  // [THREADS, TILE]

struct Tile {
    first: u32,                   // the tile's first token
    count: u32,                   // its tokens (0: none, the workgroup has nothing to do)
    row: u32,                     // the thread's row of this part
    lane: u32,
}

fn tile_of(group: vec3<u32>, groups: vec3<u32>, t: u32) -> Tile {
    let first = group.z * TILE;
    let n = select(run.n, run.n_logits, LOGITS);
    return Tile(first, select(0u, min(TILE, n - first), first < n), (group.x + group.y * groups.x) * (THREADS / LANES)
                + t / LANES, t % LANES);
}

// the tile's outputs from each thread's acc (its lane's sum for each of the tile's tokens). The loops stop at the
// tile's count: on NVIDIA's driver, loops to TILE with the count as a condition made decode's products 1.4x slower
fn store_rows(tile: Tile, t: u32, acc: array<f32, TILE>) {
    for (var j = 0u; j < tile.count; j++) {
        partial[t * TILE + j] = acc[j];
    }
    workgroupBarrier();
    for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
        if (tile.lane < stride) {
            for (var j = 0u; j < tile.count; j++) {
                partial[t * TILE + j] += partial[(t + stride) * TILE + j];
            }
        }
        workgroupBarrier();
    }
    if (tile.row < ROWS) {
        let r = OFFSET + tile.row;
        for (var j = tile.lane; j < tile.count; j += LANES) {  // a row's lanes write its tokens
            let token = tile.first + j;
            var y = partial[(t - tile.lane) * TILE + j];
            if (BIAS) {
                y += bias[r];
            }
            if (r >= THIRD) {
                out_c[token * STRIDE_C + r - THIRD] = y * SCALE;
            } else if (r >= SECOND) {
                out_b[token * STRIDE_B + r - SECOND] = y * SCALE;
            } else {
                let at = token * OUT_STRIDE + OUT_OFFSET + r;
                if (ACCUMULATE) {
                    out[at] = fma(y, SCALE, out[at]);
                } else {
                    out[at] = y * SCALE;
                }
            }
        }
    }
}
