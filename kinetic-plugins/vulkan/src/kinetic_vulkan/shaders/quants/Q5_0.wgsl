// planes (layout.py): 16 bytes of low four bits a chunk, each chunk's fifth bits (a word), each chunk's d (f16);
// q - 16
const HAS_MIN = false;
override HIGH_AT = 4u * CHUNKS;
override D_AT = HIGH_AT + (CHUNKS + 3u) / 4u * 4u;
fn chunk(g: u32) -> Chunk {
    return nibbles(w[g], word(HIGH_AT + g), 16u, half_float(D_AT, g), 0.0);
}
