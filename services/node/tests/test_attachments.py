"""attachment_read: images as image content within bounds, PDFs as text with page numbers,
other files as facts, and every malformed or hostile file as a clear error."""

from __future__ import annotations

import base64
import io

import pytest
from fpdf import FPDF
from PIL import Image

from vault_node.testing import Harness, NodeFactory

PAGES = (
    "Quarterly planning starts with the roadmap.",
    "Budget figures for the infrastructure team.",
    "The heliotrope migration finishes in March.",
)


def pdf_of(pages: tuple[str, ...]) -> bytes:
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in pages:
        document.add_page()
        document.multi_cell(0, 10, text)
    return bytes(document.output())


def png_of(width: int, height: int, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), "red").save(out, "PNG")
    return out.getvalue()


@pytest.mark.asyncio
async def test_a_pdf_reads_back_as_its_text_with_page_numbers(start_node: NodeFactory) -> None:
    node = await start_node({"attachments/plan.pdf": pdf_of(PAGES)})
    found = await node.ok("attachment_read", {"path": "attachments/plan.pdf"})
    assert found["kind"] == "pdf"
    assert found["mime"] == "application/pdf"
    assert found["page_count"] == 3
    assert [page["page"] for page in found["pages"]] == [1, 2, 3]
    assert "heliotrope migration" in found["pages"][2]["text"]
    assert "next_page" not in found


@pytest.mark.asyncio
async def test_a_long_pdf_is_read_a_window_of_pages_at_a_time(start_node: NodeFactory) -> None:
    node = await start_node({"a/long.pdf": pdf_of(tuple(f"page number {i}" for i in range(1, 8)))})
    found = await node.ok("attachment_read", {"path": "a/long.pdf", "first_page": 3, "pages": 2})
    assert [page["page"] for page in found["pages"]] == [3, 4]
    assert "page number 4" in found["pages"][1]["text"]
    assert found["next_page"] == 5
    assert "first_page=5" in found["hint"]


@pytest.mark.asyncio
async def test_an_image_comes_back_as_image_content_downscaled(start_node: NodeFactory) -> None:
    node = await start_node({"attachments/wide.png": png_of(4000, 1000)})
    result = await node.call("attachment_read", {"path": "attachments/wide.png"})
    assert not result["isError"]
    facts = result["structuredContent"]
    assert (facts["width"], facts["height"], facts["shown"]) == (4000, 1000, "1568x392")
    image = result["content"][1]
    assert image["type"] == "image"
    assert image["mimeType"] == "image/jpeg"
    with Image.open(io.BytesIO(base64.b64decode(image["data"]))) as shown:
        assert shown.size == (1568, 392)


@pytest.mark.asyncio
async def test_an_image_with_transparency_stays_png(start_node: NodeFactory) -> None:
    node = await start_node({"attachments/icon.png": png_of(32, 32, "RGBA")})
    result = await node.call("attachment_read", {"path": "attachments/icon.png"})
    assert result["content"][1]["mimeType"] == "image/png"
    assert result["structuredContent"]["shown"] == "32x32"


@pytest.mark.asyncio
async def test_an_image_is_shrunk_until_it_fits_the_response_limit(
    start_node: NodeFactory,
) -> None:
    noisy = Image.effect_noise((1500, 1500), 120).convert("RGB")
    out = io.BytesIO()
    noisy.save(out, "PNG")
    node = await start_node({"n.png": out.getvalue()}, max_response_bytes=65_536)
    result = await node.call("attachment_read", {"path": "n.png"})
    assert len(result["content"][1]["data"]) < 65_536


@pytest.mark.asyncio
async def test_a_text_attachment_reads_as_its_text(node: Harness) -> None:
    data = base64.b64encode("a,b\n1,ü\n".encode()).decode()
    await node.ok("attachment_put", {"path": "data/x.csv", "data": data})
    found = await node.ok("attachment_read", {"path": "data/x.csv"})
    assert (found["kind"], found["mime"], found["text"]) == ("text", "text/csv", "a,b\n1,ü\n")


@pytest.mark.asyncio
async def test_audio_and_text_that_is_not_utf8_are_described_not_read(
    start_node: NodeFactory,
) -> None:
    node = await start_node({"a/voice.mp3": b"ID3\x03 audio", "a/latin.txt": b"caf\xe9"})
    audio = await node.ok("attachment_read", {"path": "a/voice.mp3"})
    assert (audio["kind"], audio["mime"], audio["bytes"]) == ("file", "audio/mpeg", 10)
    latin = await node.ok("attachment_read", {"path": "a/latin.txt"})
    assert "text" not in latin
    assert "not UTF-8" in latin["hint"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("files", "path", "code", "fragment"),
    [
        (
            {"bad.pdf": b"%PDF-1.7\n garbage that is no PDF at all"},
            "bad.pdf",
            "unreadable",
            "malformed",
        ),
        ({"fake.pdf": b"hello"}, "fake.pdf", "unreadable", "does not start like a PDF"),
        (
            {"bad.png": b"\x89PNG\r\n\x1a\n not an image"},
            "bad.png",
            "unreadable",
            "not a readable image",
        ),
        ({"wiki/a.md": "# A\n"}, "wiki/a.md", "unreadable", "note_read"),
        ({}, "attachments/none.png", "not_found", "attachment_list"),
        ({}, "../escape.png", "invalid_path", "escape"),
    ],
)
async def test_unreadable_attachments_get_a_clear_error(
    start_node: NodeFactory, files: dict[str, bytes | str], path: str, code: str, fragment: str
) -> None:
    node = await start_node(files)
    got_code, message = await node.fails("attachment_read", {"path": path})
    assert got_code == code
    assert fragment in message


@pytest.mark.asyncio
async def test_an_image_bomb_is_refused_before_it_is_decoded(start_node: NodeFactory) -> None:
    # A 1-bit PNG of 10,000 x 10,000 pixels: tiny on disk, 100 megapixels once decoded.
    out = io.BytesIO()
    Image.new("1", (10_000, 10_000)).save(out, "PNG")
    node = await start_node({"bomb.png": out.getvalue()})
    code, message = await node.fails("attachment_read", {"path": "bomb.png"})
    assert code == "unreadable"
    assert "10000x10000 pixels" in message


@pytest.mark.asyncio
async def test_a_write_only_token_cannot_read_an_attachment(start_node: NodeFactory) -> None:
    node = await start_node({"plan.pdf": pdf_of(PAGES)})
    reply = await node.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "attachment_read", "arguments": {"path": "plan.pdf"}},
        },
        token=node.token("write"),
    )
    assert reply.status_code == 403
    assert "heliotrope" not in reply.text


@pytest.mark.asyncio
async def test_a_long_text_attachment_is_cut_and_says_so(start_node: NodeFactory) -> None:
    node = await start_node({"a/long.txt": "x" * 300_000}, max_response_bytes=1_048_576)
    found = await node.ok("attachment_read", {"path": "a/long.txt"})
    assert len(found["text"]) == 256 * 1024
    assert found["hint"] == "the first 262144 characters of 300000 bytes"


@pytest.mark.asyncio
async def test_note_search_finds_a_pdf_by_a_phrase_on_its_third_page(
    start_node: NodeFactory,
) -> None:
    node = await start_node({"docs/plan.pdf": pdf_of(PAGES), "wiki/a.md": "# A\n\nroadmap\n"})
    found = await node.ok("note_search", {"query": "when does the heliotrope migration finish?"})
    (hit,) = found["hits"]
    assert hit["path"] == "docs/plan.pdf"
    assert hit["kind"] == "attachment"
    assert "<<heliotrope>>" in hit["snippet"]
    notes = await node.ok("note_search", {"query": "roadmap"})
    assert {h["path"]: h["kind"] for h in notes["hits"]} == {
        "wiki/a.md": "note", "docs/plan.pdf": "attachment",
    }  # fmt: skip
    read = await node.ok("attachment_read", {"path": hit["path"]})
    assert "heliotrope" in repr(read)
