// What both embedding lookups share (embed.wgsl, embed_q8.wgsl): workgroup r takes the pass's row r, whose token
// names a row of the matrix; this part holds rows FIRST .. FIRST + ROWS, and the others are another part's. The
// including shader binds the part's weights as w.
override K: u32;                  // the row length
override ROWS: u32;               // rows of this part
override FIRST: u32 = 0u;         // the part's first row in the whole matrix
override SCALE: f32 = 1.0;

const THREADS = 64u;

@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<uniform> run: Run;

fn in_part(r: u32) -> bool {  // whether the pass has a row r whose token is a row of this part
    return r < run.n && tokens[r] >= FIRST && tokens[r] < FIRST + ROWS;
}
