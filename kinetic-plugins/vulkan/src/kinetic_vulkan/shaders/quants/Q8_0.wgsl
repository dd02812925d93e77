// block of 32: d (f16), 2 bytes of padding (weights.py), 32 int8 in words 1 to 8
const HAS_MIN = false;
fn chunk(base: u32, c: u32) -> Chunk {
    let b = base + c * 9u;
    var ch = unit_chunk(unpack2x16float(w[b]).x, 0.0);
    for (var i = 0u; i < 8u; i++) {
        ch.q[i] = w[b + 1u + i];
    }
    return ch;
}
