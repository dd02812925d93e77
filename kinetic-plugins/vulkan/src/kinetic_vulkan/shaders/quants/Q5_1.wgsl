// block of 32: d, m (f16), the 32 fifth bits (word 1), 16 bytes of low 4 bits (words 2 to 5); q * d + m
const HAS_MIN = true;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + c * 6u;
    let dm = unpack2x16float(w[b]);
    var ch = unit_chunk(dm.x, dm.y);
    nibbles(&ch, b + 2u, w[b + 1u], 0u);
    return ch;
}
