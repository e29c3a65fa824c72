"""Attachments as content a model can take in: images downscaled to a bounded size (in a bounded
child process, `vault_node.thumbnail`), PDFs as their text page by page, every other allowed
type as what is known about it.

`read_attachment` is shared by the `attachment_read` tool and `resources/read`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from vault_core import ATTACHMENT_LIMIT, ATTACHMENT_TYPES, PathNotFoundError, Vault, pdftext
from vault_core import UnreadableAttachmentError as Unreadable
from vault_node import thumbnail
from vault_node.tools.common import modified
from vault_node.uris import mime_of

RASTER = tuple(thumbnail.FORMATS)
TEXTUAL = (".txt", ".csv", ".json", ".yaml", ".yml", ".svg")
TEXT_CHARS = 256 * 1024  # of a text attachment; the result is cut to max_response_bytes as well
IMAGE_BYTES = 1024 * 1024  # the encoded image, before base64 (and within max_response_bytes)


@dataclass
class Read:
    """An attachment read out: what is known about it, and an image block if it is one."""

    facts: dict[str, Any]
    image: dict[str, Any] | None = None
    pages: list[dict[str, Any]] = field(default_factory=list)


def load(vault: Vault, raw: str) -> tuple[str, bytes, os.stat_result]:
    """The attachment's path, bytes and stat; a note, a folder or a pipe is refused."""
    rel, handle, found = _open(vault, raw)
    with handle:
        return rel, handle.read(ATTACHMENT_LIMIT + 1), found


def _open(vault: Vault, raw: str) -> tuple[str, BinaryIO, os.stat_result]:
    if not raw.strip().lower().endswith(ATTACHMENT_TYPES):
        raise Unreadable(raw.strip(), "it is not an attachment; read notes with note_read")
    target = vault.resolve(raw)
    try:
        fd = os.open(target.abs, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise PathNotFoundError(target.rel) from exc
    handle = os.fdopen(fd, "rb")
    found = os.fstat(handle.fileno())
    if refusal := _refusal(found):
        handle.close()
        raise Unreadable(target.rel, refusal)
    return target.rel, handle, found


def _refusal(found: os.stat_result) -> str | None:
    if not stat.S_ISREG(found.st_mode):
        return "it is not a regular file"
    if found.st_size > ATTACHMENT_LIMIT:
        return f"it is over {ATTACHMENT_LIMIT} bytes"
    return None


def read_attachment(
    vault: Vault, raw: str, first: int = 1, count: int = 20, image_bytes: int = IMAGE_BYTES
) -> Read:
    """Read one attachment: an image block for a raster image, pages `first`.. of a PDF."""
    rel, handle, found = _open(vault, raw)
    kind = _kind(rel.lower())
    facts: dict[str, Any] = {
        "vault": vault.name,
        "path": rel,
        "kind": kind,
        "mime": mime_of(rel),
        "bytes": found.st_size,
        "modified": modified(found.st_mtime_ns),
    }
    with handle:
        if kind == "image":  # the child reads the file itself: the node never holds its bytes
            image, shown = thumbnail.show(rel, handle, image_bytes)
            facts.update(shown)
            return Read(facts, image)
        if kind == "file":
            return Read(facts)  # described, not read
        data = handle.read(ATTACHMENT_LIMIT + 1)
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
