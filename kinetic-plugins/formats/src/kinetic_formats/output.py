"""Writing a model file so that nothing is half-written: beside the target, renamed over it once whole."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from kinetic.errors import ModelFileError


@contextmanager
def replacing(out: Path) -> Iterator[BinaryIO]:
    """A file to write out's bytes into: OUT.partial, renamed to out when the block ends, removed on any failure."""
    temporary = out.with_name(out.name + ".partial")
    try:
        with open(temporary, "wb") as f:
            yield f
        os.replace(temporary, out)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise ModelFileError(f"cannot write {out}: {error.strerror}") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
