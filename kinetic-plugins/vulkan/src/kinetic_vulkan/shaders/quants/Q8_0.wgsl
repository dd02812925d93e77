// planes (layout.py): 32 int8 a chunk (words 8g..), then each chunk's d (f16)
const HAS_MIN = false;
override D_AT = 8u * CHUNKS;
fn chunk(g: u32) -> Chunk {
    return Chunk(w[2u * g], w[2u * g + 1u], 1, 1, half_float(D_AT, g), 0.0);
}
