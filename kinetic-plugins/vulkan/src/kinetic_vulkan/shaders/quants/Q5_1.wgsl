// planes (layout.py): 16 bytes of low four bits a chunk, each chunk's fifth bits (a word), each chunk's d and m
// (f16); d * q + m
const HAS_MIN = true;
override HIGH_AT = 4u * CHUNKS;
override DM_AT = HIGH_AT + (CHUNKS + 3u) / 4u * 4u;
fn chunk(g: u32) -> Chunk {
    let dm = unpack2x16float(word(DM_AT + g));
    return nibbles(w[g], word(HIGH_AT + g), 0u, dm.x, dm.y);
}
