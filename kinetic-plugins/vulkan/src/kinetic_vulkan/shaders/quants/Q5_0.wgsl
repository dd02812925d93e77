// block of 32: d (f16), 2 bytes of padding (weights.py), the 32 fifth bits (word 1), 16 bytes of low 4 bits
// (words 2 to 5); minus 16
const HAS_MIN = false;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + c * 6u;
    var ch = unit_chunk(unpack2x16float(w[b]).x, 0.0);
    nibbles(&ch, b + 2u, w[b + 1u], 16u);
    return ch;
}
