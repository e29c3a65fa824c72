"""Attachments as content a model can take in: images downscaled to a bounded size, PDFs as
their text page by page, every other allowed type as what is known about it.

`read_attachment` is shared by the `attachment_read` tool and `resources/read`.
"""

from __future__ import annotations

import base64
import io
import os
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from PIL import Image

from vault_core import ATTACHMENT_LIMIT, ATTACHMENT_TYPES, Vault, pdftext
from vault_core import UnreadableAttachmentError as Unreadable
from vault_core.errors import PathNotFoundError
from vault_node.tools.common import modified

MIME = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".svg": "image/svg+xml", ".pdf": "application/pdf",
    ".txt": "text/plain", ".csv": "text/csv", ".json": "application/json",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4", ".wav": "audio/wav",
}  # fmt: skip
RASTER = (".png", ".jpg", ".jpeg", ".gif", ".webp")
TEXTUAL = (".txt", ".csv", ".json", ".yaml", ".yml", ".svg")
MAX_SIDE = 1568  # the longest side models take in without scaling it down themselves
MAX_PIXELS = 50_000_000  # refused before decoding: a decompression bomb never unpacks
TEXT_CHARS = 256 * 1024  # of a text attachment; the result is cut to max_response_bytes as well
IMAGE_BYTES = 1024 * 1024  # the encoded image, before base64 (and within max_response_bytes)


@dataclass
class Read:
    """An attachment read out: what is known about it, and an image block if it is one."""

    facts: dict[str, Any]
    image: dict[str, Any] | None = None
    pages: list[dict[str, Any]] = field(default_factory=list)


def mime_of(rel: str) -> str:
    return MIME.get(PurePosixPath(rel.lower()).suffix, "application/octet-stream")


def load(vault: Vault, raw: str) -> tuple[str, bytes, os.stat_result]:
    """The attachment's path, bytes and stat; a note, a folder or a pipe is refused."""
    if not raw.strip().lower().endswith(ATTACHMENT_TYPES):
        raise Unreadable(raw.strip(), "it is not an attachment; read notes with note_read")
    target = vault.resolve(raw)
    try:
        fd = os.open(target.abs, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise PathNotFoundError(target.rel) from exc
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise Unreadable(target.rel, "it is not a regular file")
        if found.st_size > ATTACHMENT_LIMIT:
            raise Unreadable(target.rel, f"it is over {ATTACHMENT_LIMIT} bytes")
        return target.rel, handle.read(ATTACHMENT_LIMIT + 1), found


def read_attachment(
    vault: Vault, raw: str, first: int = 1, count: int = 20, image_bytes: int = IMAGE_BYTES
) -> Read:
    """Read one attachment: an image block for a raster image, pages `first`.. of a PDF."""
    rel, data, found = load(vault, raw)
    kind = _kind(rel.lower())
    facts: dict[str, Any] = {
        "vault": vault.name,
        "path": rel,
        "kind": kind,
        "mime": mime_of(rel),
        "bytes": len(data),
        "modified": modified(found.st_mtime_ns),
    }
    if kind == "image":
        image, shown = downscale(rel, data, image_bytes)
        facts.update(shown)
        return Read(facts, image)
    if kind == "pdf":
        return _pdf(facts, rel, data, first, count)
    if kind == "text":
        try:
            facts["text"] = data.decode("utf-8")[:TEXT_CHARS]
        except UnicodeDecodeError:
            facts["hint"] = "not UTF-8 text: only its type, size and date can be shown"
        else:
            if len(facts["text"]) == TEXT_CHARS:
                facts["hint"] = f"the first {TEXT_CHARS} characters of {len(data)} bytes"
    return Read(facts)


def _kind(lowered: str) -> str:
    if lowered.endswith(RASTER):
        return "image"
    if lowered.endswith(".pdf"):
        return "pdf"
    return "text" if lowered.endswith(TEXTUAL) else "file"


def downscale(rel: str, data: bytes, budget: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An MCP image block of at most MAX_SIDE pixels a side and `budget` bytes, and its sizes."""
    (width, height), frame = _decode(rel, data)
    if frame is None:
        raise Unreadable(rel, f"it has {width}x{height} pixels, over {MAX_PIXELS}")
    frame.thumbnail((MAX_SIDE, MAX_SIDE))
    encoded, mime = _encode(frame)
    while len(encoded) > budget and min(frame.size) > 16:
        frame.thumbnail((frame.width // 2, frame.height // 2))
        encoded, mime = _encode(frame)
    block = {"type": "image", "data": base64.b64encode(encoded).decode("ascii"), "mimeType": mime}
    return block, {"width": width, "height": height, "shown": f"{frame.width}x{frame.height}"}


def _decode(rel: str, data: bytes) -> tuple[tuple[int, int], Image.Image | None]:
    """The image's size and its first frame; no frame when it has too many pixels to decode."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # checked below
            with Image.open(io.BytesIO(data)) as image:
                size = image.size
                if size[0] * size[1] > MAX_PIXELS:
                    return size, None
                image.draft("RGB", (MAX_SIDE, MAX_SIDE))
                return size, image.convert("RGBA" if _has_alpha(image) else "RGB")
    except Image.DecompressionBombError as exc:
        raise Unreadable(rel, f"it has more than {MAX_PIXELS} pixels") from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise Unreadable(rel, f"it is not a readable image ({type(exc).__name__})") from exc


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _encode(frame: Image.Image) -> tuple[bytes, str]:
    out = io.BytesIO()
    if frame.mode == "RGBA":
        frame.save(out, "PNG", optimize=True)
        return out.getvalue(), "image/png"
    frame.save(out, "JPEG", quality=82)
    return out.getvalue(), "image/jpeg"


def _pdf(facts: dict[str, Any], rel: str, data: bytes, first: int, count: int) -> Read:
    found = pdftext.extract(data, rel, max_pages=first - 1 + count)
    pages: list[dict[str, Any]] = [
        {"page": number, "text": page}
        for number, page in enumerate(found.pages, start=1)
        if number >= first
    ]
    facts["page_count"] = found.page_count
    last = pages[-1]["page"] if pages else first - 1
    if last < found.page_count:
        facts["next_page"] = last + 1
        facts["hint"] = f"pages {first}-{last} of {found.page_count}; pass first_page={last + 1}"
    return Read(facts, pages=pages)
