// planes (layout.py): 16 bytes of nibbles a chunk, then each chunk's d (f16); q - 8
const HAS_MIN = false;
override D_AT = 4u * CHUNKS;
fn chunk(g: u32) -> Chunk {
    return nibbles(w[g], 0u, 8u, half_float(D_AT, g), 0.0);
}
