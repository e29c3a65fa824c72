"""The image `attachment_read` shows: decoded in a bounded child process, in the one format its
extension names, and scaled down to what a model takes in.

A 48 KB PNG can unpack to 200 MB of pixels, and image decoders are C code fed a stranger's
bytes. So the node never decodes an image itself: a child (`vault_core.child`, the script
`thumbnail_child.py`) reads the file and decodes it under an address-space bound, and at most
`child.SLOTS` children run at once, so image reads take at most SLOTS × MEMORY_BYTES however
many calls arrive. The child registers only the decoder the extension names (Pillow's other
plugins, EPS and its Ghostscript among them, are never loaded) and refuses bytes of any other
format.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from vault_core import child

FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".gif": "GIF", ".webp": "WEBP"}
MAX_SIDE = 1568  # the longest side models take in without scaling it down themselves
MAX_PIXELS = 50_000_000  # refused before decoding: a decompression bomb never unpacks
MEMORY_BYTES = 1024 * 1024 * 1024  # 50 Mpx: a PNG peaks at 330 MB, a WebP with alpha at 860 MB
MAX_SECONDS = 20.0
CHILD = Path(__file__).with_name("thumbnail_child.py")


def show(rel: str, source: bytes | IO[bytes], budget: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An MCP image block of at most MAX_SIDE pixels a side and `budget` bytes, and the
    image's sizes. Raises UnreadableAttachmentError for bytes that are not a readable image
    of the extension's format, or that need more than the child's bounds."""
    fmt = FORMATS[rel[rel.rfind(".") :].lower()]
    found = child.run(
        CHILD,
        [fmt, str(budget), str(MAX_SIDE), str(MAX_PIXELS)],
        source,
        rel,
        memory=MEMORY_BYTES,
        seconds=MAX_SECONDS,
    )
    block = {"type": "image", "data": found["data"], "mimeType": found["mime"]}
    return block, {"width": found["width"], "height": found["height"], "shown": found["shown"]}
