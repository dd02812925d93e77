"""Unicode character classes as llama.cpp's tokenizer sees them, for the `regex` package.

llama.cpp classifies code points with tables generated from Unicode 15.1. The `regex` package
knows newer versions, so code points assigned since then are taken out of every category here:
to llama.cpp they are unassigned, and tokenizing them must not change with the regex release.
Taking them out makes a regex several times slower, so text without any of them (nearly all
text) is matched with the plain categories, which then give the same answer.
"""

from __future__ import annotations

import re

import regex

_ASSIGNED_AFTER_UNICODE_15_1 = (
    (0x00558, 0x00558), (0x0058B, 0x0058C), (0x005C8, 0x005C9), (0x0088F, 0x0088F), (0x00897, 0x00897),
    (0x00B53, 0x00B54), (0x00C5C, 0x00C5C), (0x00CDC, 0x00CDC), (0x01ACF, 0x01AF0), (0x01B4E, 0x01B4F),
    (0x01B7F, 0x01B7F), (0x01C89, 0x01C8A), (0x0208F, 0x0208F), (0x0209D, 0x0209F), (0x020C1, 0x020C4),
    (0x02427, 0x02429), (0x02B96, 0x02B96), (0x02E60, 0x02E63), (0x031E4, 0x031E5), (0x0A7CB, 0x0A7CF),
    (0x0A7D2, 0x0A7D2), (0x0A7D4, 0x0A7D4), (0x0A7DA, 0x0A7DD), (0x0A7E2, 0x0A7E2), (0x0A7F1, 0x0A7F1),
    (0x0AB6C, 0x0AB6D), (0x0FBC3, 0x0FBD2), (0x0FD90, 0x0FD91), (0x0FDC8, 0x0FDCE), (0x105C0, 0x105F3),
    (0x107BB, 0x107BF), (0x10940, 0x10959), (0x10D40, 0x10D65), (0x10D69, 0x10D85), (0x10D8E, 0x10D8F),
    (0x10EC2, 0x10EC7), (0x10EC9, 0x10EEE), (0x10EF0, 0x10EFC), (0x11380, 0x11389), (0x1138B, 0x1138B),
    (0x1138E, 0x1138E), (0x11390, 0x113B5), (0x113B7, 0x113C0), (0x113C2, 0x113C2), (0x113C5, 0x113C5),
    (0x113C7, 0x113CA), (0x113CC, 0x113D5), (0x113D7, 0x113D8), (0x113E1, 0x113E2), (0x116D0, 0x116E3),
    (0x11B0A, 0x11B0A), (0x11B60, 0x11B67), (0x11BC0, 0x11BE1), (0x11BF0, 0x11BF9), (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9), (0x11DF0, 0x11DF1), (0x11F5A, 0x11F5A), (0x1246F, 0x1246F), (0x12475, 0x1247F),
    (0x12550, 0x12686), (0x13460, 0x143FA), (0x16100, 0x16139), (0x16D40, 0x16D79), (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3), (0x16FF2, 0x16FF6), (0x187F8, 0x187FF), (0x18CD6, 0x18CDA), (0x18CFF, 0x18CFF),
    (0x18D09, 0x18D20), (0x18D80, 0x18DF2), (0x18E00, 0x19191), (0x191A0, 0x191D2), (0x1B123, 0x1B128),
    (0x1B168, 0x1B168), (0x1CC00, 0x1CCFC), (0x1CD00, 0x1CEB3), (0x1CEBA, 0x1CED0), (0x1CED2, 0x1CED4),
    (0x1CEDD, 0x1CEFD), (0x1D127, 0x1D128), (0x1D1EB, 0x1D1FF), (0x1D250, 0x1D281), (0x1D6A6, 0x1D6A6),
    (0x1DB00, 0x1DB1C), (0x1DF1F, 0x1DF24), (0x1DF2B, 0x1DF81), (0x1DF90, 0x1DF96), (0x1DFCD, 0x1DFFF),
    (0x1E5D0, 0x1E5FA), (0x1E5FF, 0x1E5FF), (0x1E6C0, 0x1E6DE), (0x1E6E0, 0x1E6F5), (0x1E6FE, 0x1E6FF),
    (0x1F1AE, 0x1F1AE), (0x1F6D8, 0x1F6D9), (0x1F777, 0x1F77A), (0x1F7DA, 0x1F7DB), (0x1F7F1, 0x1F7FF),
    (0x1F8B2, 0x1F8BB), (0x1F8C0, 0x1F8C1), (0x1F8D0, 0x1F8D8), (0x1FA54, 0x1FA57), (0x1FA89, 0x1FA8F),
    (0x1FABE, 0x1FABE), (0x1FAC6, 0x1FAC6), (0x1FAC8, 0x1FAC8), (0x1FACC, 0x1FACD), (0x1FADC, 0x1FADD),
    (0x1FADF, 0x1FADF), (0x1FAE9, 0x1FAEB), (0x1FAEF, 0x1FAEF), (0x1FAF9, 0x1FAFA), (0x1FBCB, 0x1FBEF),
    (0x1FBFA, 0x1FBFA), (0x2B73A, 0x2B73F), (0x2B81E, 0x2B81E), (0x2CEA2, 0x2CEAD), (0x323B0, 0x33479),
    (0x3D000, 0x3FC3F),
)

_NEWER = "".join(f"\\U{start:08X}-\\U{end:08X}" for start, end in _ASSIGNED_AFTER_UNICODE_15_1)
# searching one class mixing both planes is slow; below U+10000 a class is a fast bitmap
_NEWER_BMP = re.compile("[" + "".join(f"\\u{a:04X}-\\u{b:04X}" for a, b in _ASSIGNED_AFTER_UNICODE_15_1 if b < 0x10000)
                        + "]")
_NEWER_ASTRAL = [(a, b) for a, b in _ASSIGNED_AFTER_UNICODE_15_1 if a >= 0x10000]
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")

_CATEGORIES = {
    "L": r"\p{L}",
    "N": r"\p{N}",
    "M": r"\p{M}",
    "P": r"\p{P}",
    "S": r"\p{S}",
    "C": r"\p{Cc}\p{Cf}\p{Co}\p{Cs}",  # llama.cpp's control flag (unassigned code points are not in it)
}
# Unicode White_Space, llama.cpp's \s (Python's \s also has \x1c-\x1f)
_SPACE = r"[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_SHORTHAND = regex.compile(r"\\p\{([LNMPSC])\}|\\([sS])")


def _expander(exact: bool):
    def expand(match: regex.Match) -> str:
        category, space = match.groups()
        if category:
            # a bracketed set, usable alone or nested in another set (regex.V1 syntax)
            return f"[[{_CATEGORIES[category]}]--[{_NEWER}]]" if exact else f"[{_CATEGORIES[category]}]"
        return _SPACE if space == "s" else f"[^{_SPACE}]"

    return expand


def compile_pattern(pattern: str, exact: bool = True) -> regex.Pattern:
    """Compile a tokenizer regex written with \\p{L}, \\p{N}, \\p{M}, \\p{P}, \\p{S}, \\p{C}, \\s and \\S.

    exact=False is faster and gives the same matches on text where needs_exact() is False.
    """
    return regex.compile(_SHORTHAND.sub(_expander(exact), pattern), regex.V1)


def needs_exact(text: str) -> bool:
    """Does text hold a code point assigned after Unicode 15.1?"""
    if text.isascii():
        return False
    if _NEWER_BMP.search(text):
        return True
    astral = {ord(char) for char in _ASTRAL.findall(text)}
    return any(a <= code <= b for code in astral for a, b in _NEWER_ASTRAL)
