// block of 32: d (f16), 2 bytes of padding (weights.py), 16 bytes of nibbles in words 1 to 4, minus 8
const HAS_MIN = false;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + c * 5u;
    var ch = unit_chunk(unpack2x16float(w[b]).x, 0.0);
    nibbles(&ch, b + 1u, 0u, 8u);
    return ch;
}
