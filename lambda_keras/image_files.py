"""Image files on disk: which ones a data pipeline can decode (shared by the classification and
detection data)."""

from __future__ import annotations

import os

__all__ = ["is_damaged_image"]


def is_damaged_image(path: str) -> bool:
    """Whether an image file is not what its name says or is cut short: its signature and its
    end marker are read (JPEG ``FFD8``...``FFD9``, PNG signature...``IEND``, GIF ...``;``, BMP
    header size), not the whole file."""
    try:
        with open(path, "rb") as f:
            head = f.read(26)
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64))
            tail = f.read().rstrip(b"\x00\r\n ")
    except OSError:
        return True
    if head.startswith(b"\xff\xd8\xff"):
        return not tail.endswith(b"\xff\xd9")
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return b"IEND" not in tail
    if head.startswith((b"GIF87a", b"GIF89a")):
        return not tail.endswith(b";")
    if head.startswith(b"BM") and len(head) >= 6:
        return int.from_bytes(head[2:6], "little") > size
    return True  # not an image format the loader decodes
