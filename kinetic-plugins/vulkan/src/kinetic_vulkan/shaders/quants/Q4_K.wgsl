// super-block of 256 (144 bytes, 36 words): d, dmin (f16), 12 bytes of eight 6-bit scales and mins, 128 bytes of
// nibbles from word 4; scale * d * q - min * dmin
const HAS_MIN = true;
fn chunk(base: u32, c: u32) -> Chunk {
    return k4_chunk(base + (c / 8u) * 36u, c % 8u, 4u, 0u);
}
