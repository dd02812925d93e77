"""Text scanned as it streams."""


def partial_end(text: str, marker: str) -> int:
    """The length of the longest end of text that is a proper start of marker: what must be held back, for
    the marker may be completing."""
    return next((n for n in range(min(len(marker) - 1, len(text)), 0, -1) if marker.startswith(text[-n:])), 0)
