#!/usr/bin/env python3
"""llama.cpp's source from the PyPI sdist, and its tools built once, in the user cache
(kinetic.testing.llama_cpp).

    python scripts/llama_cpp.py source              # prints the source folder
    python scripts/llama_cpp.py build [TARGET ...]  # builds llama-tokenize etc., prints the bin folder
"""

from __future__ import annotations

import sys

from kinetic.testing.llama_cpp import DEFAULT_TARGETS, build, source


def main(argv: list[str]) -> int:
    if argv[:1] == ["source"]:
        print(source())
    elif argv[:1] == ["build"]:
        print(build(tuple(argv[1:]) or DEFAULT_TARGETS))
    else:
        print("usage: llama_cpp.py source | build [TARGET ...]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
