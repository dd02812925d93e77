// planes (layout.py): 16 bytes of nibbles a chunk, then each chunk's d and m (f16); d * q + m
const HAS_MIN = true;
override DM_AT = 4u * CHUNKS;
fn chunk(g: u32) -> Chunk {
    let dm = unpack2x16float(word(DM_AT + g));
    return nibbles(w[g], 0u, 0u, dm.x, dm.y);
}
