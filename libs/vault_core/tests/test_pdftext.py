"""pdftext: page text out of a child process that a malformed or hostile PDF cannot hold."""

from __future__ import annotations

import zlib

import pytest
from fpdf import FPDF

from vault_core import UnreadableAttachmentError, deadline, pdftext
from vault_core.errors import DeadlineError


def pdf_of(*pages: str) -> bytes:
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in pages:
        document.add_page()
        document.multi_cell(0, 10, text)
    return bytes(document.output())


def raw_pdf(page_content: bytes, *, flate: bool = False) -> bytes:
    """A hand-written one-page PDF around one content stream (offsets computed)."""
    stream = zlib.compress(page_content, 9) if flate else page_content
    filters = b" /Filter /FlateDecode" if flate else b""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d%s >>\nstream\n" % (len(stream), filters) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_every_page_is_read_in_order() -> None:
    found = pdftext.extract(pdf_of("first page", "second page", "third page"), "a.pdf")
    assert found.page_count == 3
    assert [page.strip() for page in found.pages] == ["first page", "second page", "third page"]
    assert found.complete


def test_pages_past_the_bound_are_counted_not_read() -> None:
    found = pdftext.extract(pdf_of(*(f"p{i}" for i in range(5))), "a.pdf", max_pages=2)
    assert (len(found.pages), found.page_count, found.complete) == (2, 5, False)


def test_a_hand_written_pdf_reads() -> None:
    found = pdftext.extract(raw_pdf(b"BT /F1 12 Tf 72 700 Td (hand made) Tj ET"), "h.pdf")
    assert "hand made" in found.pages[0]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"not a pdf", "does not start like a PDF"),
        (b"%PDF-1.7\n" + b"\x00" * 200, "malformed"),
        (b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 1 0 R >> endobj\n%%EOF", "malformed"),
    ],
)
def test_a_malformed_pdf_is_a_clear_error(data: bytes, fragment: str) -> None:
    with pytest.raises(UnreadableAttachmentError) as caught:
        pdftext.extract(data, "bad.pdf")
    assert caught.value.code == "unreadable"
    assert fragment in caught.value.message
    assert "bad.pdf" in caught.value.message


def test_a_compression_bomb_is_refused_not_unpacked() -> None:
    bomb = raw_pdf(b"BT /F1 12 Tf 72 700 Td (x) Tj ET " + b" " * 120_000_000, flate=True)
    assert len(bomb) < 1_000_000
    with pytest.raises(UnreadableAttachmentError) as caught:
        pdftext.extract(bomb, "bomb.pdf")
    assert "bomb.pdf: it is malformed (LimitReachedError)" in caught.value.message


def test_a_reader_past_its_time_bound_is_killed_with_a_clear_error() -> None:
    with pytest.raises(UnreadableAttachmentError) as caught:
        pdftext.extract(pdf_of("x"), "slow.pdf", seconds=0.001)
    assert "took over" in caught.value.message


def test_a_call_already_past_its_deadline_starts_no_reader() -> None:
    limit = deadline.Limit(0)
    with pytest.raises(DeadlineError):
        limit.run(pdftext.extract, pdf_of("x"), "a.pdf")
