// block of 32: d, m (f16), 16 bytes of nibbles in words 1 to 4; q * d + m
const HAS_MIN = true;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + c * 5u;
    let dm = unpack2x16float(w[b]);
    var ch = unit_chunk(dm.x, dm.y);
    nibbles(&ch, b + 1u, 0u, 0u);
    return ch;
}
