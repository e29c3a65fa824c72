"""Bytes on disk ↔ the text tools work on, keeping a note's BOM and line endings.

Tools see `\\n` line endings only; a note written with CRLF is written back with
CRLF, so an edit in one section never rewrites every line of a Windows file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from vault_core.errors import EncodingError, InvalidTextError

BOM = "\ufeff"
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Decoded:
    """A note's text with LF line endings, plus what it takes to write it back."""

    text: str
    crlf: bool = False
    bom: bool = False


def content_hash(data: bytes) -> str:
    """Hex of the first 16 bytes of SHA-256 over the whole file (docs/design.md#content-hash)."""
    return hashlib.sha256(data).digest()[:16].hex()


def same_hash(expected: str, actual: str) -> bool:
    """Hashes compare case-insensitively (docs/design.md#content-hash)."""
    return expected.strip().lower() == actual.lower()


def decode(data: bytes, rel: str) -> Decoded:
    """Decode UTF-8; CRLF is normalised to LF only when every line ending is CRLF."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EncodingError(rel, exc.start) from exc
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    crlf_count = text.count("\r\n")
    crlf = crlf_count > 0 and crlf_count == text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
    return Decoded(text=text, crlf=crlf, bom=bom)


def surrogate_at(text: str) -> int:
    """Where `text` holds its first lone surrogate, or -1. JSON can carry one (\\udc80), a
    file name that is not UTF-8 reads as one (surrogateescape); UTF-8 cannot hold one."""
    if text.isascii():
        return -1
    found = _SURROGATE.search(text)
    return -1 if found is None else found.start()


def check_unicode(text: str, what: str) -> str:
    """`text`, unless it holds a lone surrogate: then InvalidTextError naming `what`."""
    offset = surrogate_at(text)
    if offset >= 0:
        raise InvalidTextError(what, offset)
    return text


def encode(text: str, like: Decoded | None = None) -> bytes:
    """Encode `text` the way the note it replaces was stored (BOM, CRLF)."""
    if like is not None and like.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    if like is not None and like.bom:
        text = BOM + text
    return text.encode("utf-8")
