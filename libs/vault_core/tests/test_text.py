"""Bytes ↔ text: UTF-8 only, BOM and CRLF kept, the content hash (docs/design.md#content-hash)."""

from __future__ import annotations

import hashlib

import pytest

from vault_core.errors import EncodingError
from vault_core.text import content_hash, decode, encode, same_hash


def test_the_content_hash_is_the_first_16_bytes_of_sha256_in_hex() -> None:
    data = b"---\ntitle: x\n---\nbody\n"
    assert content_hash(data) == hashlib.sha256(data).hexdigest()[:32]
    assert len(content_hash(b"")) == 32


def test_hashes_compare_case_insensitively() -> None:
    value = content_hash(b"x")
    assert same_hash(value.upper(), value)
    assert same_hash(f"  {value} ", value)
    assert not same_hash(content_hash(b"y"), value)


def test_bytes_that_are_not_utf8_name_the_offset() -> None:
    with pytest.raises(EncodingError) as caught:
        decode(b"abc\xff\xfe", "x.md")
    assert caught.value.offset == 3
    assert "offset 3" in caught.value.message


def test_a_crlf_file_is_edited_as_lf_and_written_back_as_crlf() -> None:
    decoded = decode(b"a\r\nb\r\n", "x.md")
    assert decoded.text == "a\nb\n"
    assert decoded.crlf
    assert encode(decoded.text + "c\n", decoded) == b"a\r\nb\r\nc\r\n"


def test_mixed_line_endings_are_left_exactly_as_they_are() -> None:
    decoded = decode(b"a\r\nb\n", "x.md")
    assert not decoded.crlf
    assert decoded.text == "a\r\nb\n"
    assert encode(decoded.text, decoded) == b"a\r\nb\n"


def test_a_bom_is_tolerated_and_kept() -> None:
    decoded = decode("\ufeff---\ntitle: x\n---\n".encode(), "x.md")
    assert decoded.bom
    assert decoded.text.startswith("---\n")
    assert encode(decoded.text, decoded) == "\ufeff---\ntitle: x\n---\n".encode()


def test_new_text_is_plain_utf8_with_lf() -> None:
    assert encode("日本語\n") == "日本語\n".encode()
