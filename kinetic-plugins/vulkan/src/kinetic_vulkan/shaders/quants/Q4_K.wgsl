// planes (layout.py): 16 bytes of nibbles a chunk, then each super-block of 8 chunks' 16-byte head (d, dmin, 12
// bytes of 6-bit scales and mins); scale * d * q - min * dmin
const HAS_MIN = true;
fn chunk(g: u32) -> Chunk {
    return k4_chunk(w[CHUNKS + g / 8u], g % 8u, w[g], 0u);
}
