"""Resources, templates, prompts and attachment content as the official SDK client sees them
over Streamable HTTP on loopback."""

from __future__ import annotations

import base64
import io

import pytest
from fpdf import FPDF
from mcp import MCPError
from PIL import Image

from ..deploy.conftest import call, mcp_session
from .conftest import NodeServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


async def test_notes_are_resources_the_sdk_lists_and_reads(node_server: NodeServer) -> None:
    async with mcp_session(node_server.url, node_server.token()) as s:
        init_resources = await s.list_resources()
        uris = {str(r.uri) for r in init_resources.resources}
        read = await s.read_resource("secondbrain://default/wiki/backoff.md")
        templates = await s.list_resource_templates()
        with pytest.raises(MCPError) as missing:
            await s.read_resource("secondbrain://default/wiki/nothing-here.md")
    assert "secondbrain://default/wiki/rate-limiting.md" in uris
    (content,) = read.contents
    assert content.mime_type == "text/markdown"
    assert "Exponential backoff" in content.text  # type: ignore[union-attr]
    assert templates.resource_templates[0].uri_template == "secondbrain://{vault}/{+path}"
    assert missing.value.error.code == -32002


async def test_prompts_come_through_the_sdk(node_server: NodeServer) -> None:
    async with mcp_session(node_server.url, node_server.token()) as s:
        listed = await s.list_prompts()
        review = await s.get_prompt("daily_review", {"date": "2026-01-01"})
        known = await s.get_prompt("what_do_i_know", {"topic": "token buckets"})
    assert [p.name for p in listed.prompts] == ["daily_review", "meeting_capture", "what_do_i_know"]
    assert "Review my day, 2026-01-01" in review.messages[0].content.text  # type: ignore[union-attr]
    embedded = [m.content for m in known.messages if m.content.type == "resource"]
    assert str(embedded[0].resource.uri) == "secondbrain://default/wiki/rate-limiting.md"  # type: ignore[union-attr]


async def test_attachment_read_gives_the_sdk_an_image_and_pdf_pages(
    node_server: NodeServer,
) -> None:
    picture = io.BytesIO()
    Image.new("RGB", (3000, 2000), "blue").save(picture, "PNG")
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in ("Intro.", "Middle.", "The third page names the kestrel protocol."):
        document.add_page()
        document.multi_cell(0, 10, text)
    async with mcp_session(node_server.url, node_server.token()) as s:
        for path, data in (("e2e/big.png", picture.getvalue()), ("e2e/doc.pdf", document.output())):
            encoded = base64.b64encode(bytes(data)).decode()
            await call(s, "attachment_put", {"path": path, "data": encoded})
        image = await s.call_tool("attachment_read", {"path": "e2e/big.png"})
        pdf = await call(s, "attachment_read", {"path": "e2e/doc.pdf"})
    assert image.is_error is False
    assert image.content[1].type == "image"
    assert image.structured_content is not None
    assert image.structured_content["shown"] == "1568x1045"
    assert pdf["page_count"] == 3
    assert "kestrel protocol" in pdf["pages"][2]["text"]
    assert pdf["pages"][2]["page"] == 3
