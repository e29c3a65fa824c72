"""The capture tools (docs/design.md#tools): daily notes, the inbox, templates, and daily_range."""

from __future__ import annotations

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio


def text_of(node: Harness, rel: str) -> str:
    return (node.data / "default" / rel).read_text()


async def test_note_from_template_lists_and_renders(node: Harness) -> None:
    assert (await node.ok("note_from_template"))["templates"] == ["meeting"]
    made = await node.ok(
        "note_from_template", {"template": "meeting", "title": "Kick-off Ä", "tags": ["q1"]}
    )
    assert made["path"].startswith("inbox/")
    assert made["path"].endswith("-kick-off-ae.md")
    text = text_of(node, made["path"])
    assert '\ntitle: "Kick-off Ä"\n' in text
    assert "# Kick-off Ä" in text
    assert "- q1" in text
    assert "{{" not in text
    code, message = await node.fails("note_from_template", {"template": "nope"})
    assert code == "not_found"
    assert "without arguments" in message
    again = await node.fails("note_from_template", {"template": "meeting", "path": made["path"]})
    assert again[0] == "exists"


async def test_note_from_template_without_a_templates_folder(start_node: NodeFactory) -> None:
    node = await start_node({"a.md": "# A\n"})
    found = await node.ok("note_from_template")
    assert found["templates"] == []
    assert "no templates/ folder" in found["message"]


async def test_daily_note_reads_an_existing_day_without_writing(node: Harness) -> None:
    before = text_of(node, "journal/2026/2026-01-01.md")
    found = await node.ok("daily_note", {"date": "2026-01-01"})
    assert found["existed"] is True
    assert "New year planning." in found["content"]
    assert text_of(node, "journal/2026/2026-01-01.md") == before


async def test_daily_note_appends_under_an_existing_or_new_heading(node: Harness) -> None:
    await node.ok("daily_note", {"date": "2026-01-01", "append": "Coffee.", "heading": "09:00"})
    await node.ok("daily_note", {"date": "2026-01-01", "append": "Lunch.", "heading": "12:30"})
    text = text_of(node, "journal/2026/2026-01-01.md")
    assert "## 09:00\n\nNew year planning.\nCoffee.\n\n## 12:30\n\nLunch.\n" in text


async def test_daily_note_creates_a_missing_day(node: Harness) -> None:
    made = await node.ok("daily_note", {"date": "2026-03-02", "append": "Started."})
    assert made["path"] == "journal/2026/2026-03-02.md"
    assert made["existed"] is False
    text = text_of(node, made["path"])
    assert "tags:\n  - journal\ndate: 2026-03-02\n" in text
    assert "# Monday, 2 March 2026\n" in text
    assert "Started." in text


@pytest.mark.parametrize("date", ["2026-1-2", "02.01.2026", "2026-02-30"])
async def test_daily_note_refuses_a_date_not_yyyy_mm_dd(node: Harness, date: str) -> None:
    assert (await node.fails("daily_note", {"date": date}))[0] == "invalid_argument"


async def test_inbox_capture_never_loses_a_capture(node: Harness) -> None:
    first = await node.ok(
        "inbox_capture", {"text": "# Call Ann\nabout the bill", "tags": "todo", "source": "phone"}
    )
    second = await node.ok("inbox_capture", {"text": "# Call Ann\nabout the bill"})
    assert first["path"] != second["path"]
    assert second["path"].endswith("-call-ann-2.md")
    text = text_of(node, first["path"])
    assert "title: Call Ann\n" in text
    assert "  - inbox\n  - todo\n" in text
    assert "source: phone\n" in text
    assert "captured: " in text
    assert (await node.fails("inbox_capture", {"text": "   "}))[0] == "invalid_argument"


async def test_daily_range_lists_the_days_with_notes(node: Harness) -> None:
    found = await node.ok("daily_range", {"from": "2026-01-03", "to": "2025-12-30"})
    assert (found["from"], found["to"], found["days_with_notes"]) == (
        "2025-12-30",
        "2026-01-03",
        1,
    )
    (day,) = found["days"]
    assert day["date"] == "2026-01-01"
    assert day["exists"] is True
    assert "New year planning." in day["content"]
    with_empty = await node.ok("daily_range", {"from": "2d", "to": "2026-01-01", "empty": True})
    assert [d["date"] for d in with_empty["days"]] == ["2025-12-30", "2025-12-31", "2026-01-01"]
    assert with_empty["days"][0] == {
        "date": "2025-12-30",
        "exists": False,
        "path": "journal/2025/2025-12-30.md",
    }


async def test_daily_range_defaults_to_the_last_seven_days(node: Harness) -> None:
    found = await node.ok("daily_range", {"empty": True})
    assert len(found["days"]) == 7


async def test_daily_range_refuses_long_or_unreadable_ranges(node: Harness) -> None:
    code, message = await node.fails("daily_range", {"from": "2024-01-01", "to": "2026-01-01"})
    assert code == "invalid_argument"
    assert "366" in message
    assert (await node.fails("daily_range", {"from": "someday"}))[0] == "invalid_argument"
