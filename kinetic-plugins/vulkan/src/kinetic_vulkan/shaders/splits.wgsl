// How attention (attention.wgsl, combine.wgsl) splits the positions a row sees, [first, position] (kinetic.visibility:
// up to its own, the last WINDOW with a sliding window), among at most SPLITS workgroups: in pieces of whole tiles
// of SPAN_TILE positions, as few tiles a piece as SPLITS allows. The row's own position alone decides.
override WINDOW: u32 = 0u;        // 0: none
override SPLITS: u32;

const SPAN_TILE = 64u;

struct Span {
    first: u32,                   // the first position the row sees
    piece: u32,                   // positions a split takes
    count: u32,                   // splits that take any
}

fn span_of(position: u32) -> Span {
    var first = 0u;
    if (WINDOW > 0u && position + 1u > WINDOW) {
        first = position + 1u - WINDOW;
    }
    let seen = position + 1u - first;
    let piece = SPAN_TILE * ((seen + SPAN_TILE * SPLITS - 1u) / (SPAN_TILE * SPLITS));
    return Span(first, piece, (seen + piece - 1u) / piece);
}
