// planes (layout.py): 16 bytes of low four bits a chunk, each chunk's fifth bits (a word), then each super-block's
// 16-byte head as Q4_K's
const HAS_MIN = true;
override HEADS = (4u * CHUNKS + CHUNKS) / 4u;  // the heads' first four-word load (CHUNKS is a multiple of 8)
fn chunk(g: u32) -> Chunk {
    return k4_chunk(w[HEADS + g / 8u], g % 8u, w[g], word(4u * CHUNKS + g));
}
