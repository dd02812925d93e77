// super-block of 256 (176 bytes, 44 words): d, dmin (f16), 12 bytes of 6-bit scales and mins, 32 bytes of fifth
// bits from word 4 (bit j of each byte for chunk j), 128 bytes of low 4 bits from word 12, as Q4_K's
const HAS_MIN = true;
fn chunk(base: u32, c: u32) -> Chunk {
    return k4_chunk(base + (c / 8u) * 44u, c % 8u, 12u, 4u);
}
