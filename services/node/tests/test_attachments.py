"""attachment_read: images as image content within bounds, PDFs as text with page numbers,
other files as facts, and every malformed or hostile file as a clear error."""

from __future__ import annotations

import base64
import io
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import httpx
import pytest
from fpdf import FPDF
from PIL import Image

from tickets import testing as tt
from vault_node import thumbnail
from vault_node.testing import Harness, NodeFactory, blank_png, mint, serving_node, write_files
from vault_node.tools.write import PUT_LIMIT, attachment_put

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
            "not a readable PNG image",
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


def image_of(fmt: str, mode: str = "RGB", size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    colour = {"P": 1, "RGBA": (255, 0, 0, 128)}.get(mode, "red")
    Image.new(mode, size, colour).save(out, fmt)
    return out.getvalue()


def psd_of(width: int, height: int) -> bytes:
    """A raw RGB Photoshop file (Pillow reads the format but cannot write it)."""
    header = b"8BPS" + struct.pack(">H6xHIIHH", 1, 3, height, width, 8, 3)
    sections = struct.pack(">III", 0, 0, 0)  # colour mode data, resources, layers: none
    return header + sections + struct.pack(">H", 0) + b"\x80" * (3 * width * height)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("a.png", image_of("PNG"), "image/jpeg"),
        ("a.jpg", image_of("JPEG"), "image/jpeg"),
        ("a.jpeg", image_of("JPEG", "L"), "image/jpeg"),
        ("a.gif", image_of("GIF", "P"), "image/jpeg"),
        ("a.webp", image_of("WEBP", "RGBA"), "image/png"),
    ],
    ids=lambda value: value if isinstance(value, str) else "-",
)
async def test_each_supported_format_is_shown(
    start_node: NodeFactory, name: str, data: bytes, mime: str
) -> None:
    node = await start_node({f"img/{name}": data})
    result = await node.call("attachment_read", {"path": f"img/{name}"})
    assert not result["isError"], result
    facts = result["structuredContent"]
    assert (facts["width"], facts["height"], facts["shown"]) == (64, 48, "64x48")
    assert result["content"][1]["mimeType"] == mime
    with Image.open(io.BytesIO(base64.b64decode(result["content"][1]["data"]))) as shown:
        assert shown.size == (64, 48)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "data", "fmt"),
    [
        ("tiff.png", image_of("TIFF"), "PNG"),
        ("psd.png", psd_of(64, 48), "PNG"),
        ("eps.png", image_of("EPS"), "PNG"),
        ("bmp.png", image_of("BMP"), "PNG"),
        ("jpeg.png", image_of("JPEG"), "PNG"),
        ("png.jpg", image_of("PNG"), "JPEG"),
        ("eps.jpg", image_of("EPS"), "JPEG"),
        ("tiff.gif", image_of("TIFF"), "GIF"),
        ("psd.webp", psd_of(64, 48), "WEBP"),
    ],
    ids=lambda value: value if isinstance(value, str) else "-",
)
async def test_bytes_of_another_format_than_the_extension_are_refused(
    start_node: NodeFactory, name: str, data: bytes, fmt: str
) -> None:
    node = await start_node({name: data})
    code, message = await node.fails("attachment_read", {"path": name})
    assert code == "unreadable"
    assert f"it is not a readable {fmt} image: its bytes are another format" in message


def test_the_decoding_child_never_loads_another_decoder() -> None:
    # EPS is decoded by running Ghostscript on the file: its plugin must never even load.
    probe = (
        "import sys\n"
        "from vault_node import thumbnail_child as t\n"
        "try:\n"
        "    t.shrink(sys.stdin.buffer.read(), 'PNG', 1 << 20, 1568, 50_000_000)\n"
        "except t.RefusedError as exc:\n"
        "    print(exc)\n"
        "print(sorted(m for m in sys.modules if m.endswith('ImagePlugin')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=image_of("EPS"), capture_output=True, check=True
    )
    refusal, plugins = done.stdout.decode().splitlines()
    assert "another format" in refusal
    assert "PIL.EpsImagePlugin" not in plugins
    assert "PIL.TiffImagePlugin" not in plugins
    assert "PIL.PngImagePlugin" in plugins


@pytest.mark.asyncio
async def test_a_truncated_or_corrupt_image_is_a_tool_error(start_node: NodeFactory) -> None:
    whole = image_of("PNG", size=(400, 300))
    icc_bomb = whole[:33] + _chunk(b"iCCP", b"x\0\0" + zlib.compress(b"\0" * 20_000_000))
    node = await start_node({"cut.png": whole[: len(whole) // 2], "icc.png": icc_bomb + whole[33:]})
    for name in ("cut.png", "icc.png"):
        code, message = await node.fails("attachment_read", {"path": name})
        assert code == "unreadable", name
        assert "it is not a readable PNG image" in message


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = struct.pack(">I", zlib.crc32(kind + body))
    return struct.pack(">I", len(body)) + kind + body + crc


def test_reading_the_largest_image_leaves_the_node_memory_as_it_was(tmp_path: Path) -> None:
    # 7,071 x 7,071 pixels in 48 KB: decoded in the node it raised its peak by 270 MB a read.
    (tmp_path / "big.png").write_bytes(blank_png(7071, 7071))
    probe = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from vault_core import Vault\n"
        "from vault_node.tools.attachments import read_attachment\n"
        "vault = Vault(Path(sys.argv[1]), 'test')\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "read = read_attachment(vault, 'big.png')\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(read.facts['shown'], (after - before) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, check=True
    )
    shown, grown_mib = done.stdout.decode().split()
    assert shown == "1568x1568"
    assert int(grown_mib) < 32  # the pixels live and die in the child


@pytest.mark.asyncio
async def test_an_image_over_the_childs_memory_bound_is_refused_not_decoded_in_the_node(
    start_node: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(thumbnail, "MEMORY_BYTES", 160 * 2**20)  # under the 250 MB it needs
    node = await start_node({"big.png": blank_png(7071, 7071)})
    code, message = await node.fails("attachment_read", {"path": "big.png"})
    assert code == "unreadable"
    assert "needed more than 160 MiB of memory" in message


def put(base: str, token: str, path: str, size: int) -> httpx.Response:
    """attachment_put of `size` bytes over real HTTP, its base64 in lines of 76 characters
    as MIME writes it (the node takes whitespace in base64)."""
    data = base64.encodebytes(random.Random(size).randbytes(size)).decode("ascii")
    return httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "attachment_put", "arguments": {"path": path, "data": data}}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )  # fmt: skip


@pytest.mark.slow
def test_attachment_put_stores_what_its_description_promises_over_real_http(
    tmp_path: Path,
) -> None:
    # It promised 32 MiB while the 8 MiB request body stopped it near 6 MiB.
    key = tt.throwaway_key()
    write_files(tmp_path / "data" / "default", {"wiki/a.md": "# A\n"})
    assert f"up to {PUT_LIMIT:,} bytes" in attachment_put.description
    with serving_node(tmp_path, key) as node:
        token = mint(key, audience=f"{node.base}/mcp")
        fits = put(node.base, token, "files/largest.pdf", PUT_LIMIT).json()["result"]
        assert not fits["isError"], fits["content"][0]["text"]
        assert fits["structuredContent"]["bytes"] == PUT_LIMIT
        over = put(node.base, token, "files/over.pdf", PUT_LIMIT + 1).json()["result"]
        assert over["isError"]
        assert over["_meta"]["secondbrain/error"]["code"] == "too_large"
        assert "copy a larger file" in over["content"][0]["text"]
        body = put(node.base, token, "files/body.pdf", 6_400_000)
        assert body.status_code == 413
        assert f"attachment_put takes files of up to {PUT_LIMIT} bytes" in body.text
    stored = tmp_path / "data" / "default" / "files"
    assert sorted(p.name for p in stored.iterdir()) == ["largest.pdf"]
    assert (stored / "largest.pdf").stat().st_size == PUT_LIMIT
