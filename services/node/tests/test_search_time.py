"""A time named in a question's words (`since last week`, `yesterday`, `in March`) narrows
note_search by the notes' own dates, says so in `time`, and never costs the answer: when
nothing changed in that time matches, the whole question is asked of every note."""

from __future__ import annotations

import datetime as dt

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio

TODAY = dt.datetime.now(dt.UTC).date()
NOON = dt.datetime.combine(TODAY, dt.time(12), dt.UTC)
"""The vault's clock in these tests: the notes are dated from TODAY, so a run crossing
midnight must not read `yesterday` as another day than they were dated by."""


def dated(days_ago: int, text: str, made: int = 500) -> str:
    updated, created = (TODAY - dt.timedelta(days=days) for days in (days_ago, made))
    return f"---\ncreated: {created}\nupdated: {updated}\n---\n{text}\n"


NOTES = {
    "recent.md": dated(1, "# Pricing call\n\nWe agreed on the pricing tiers."),
    "older.md": dated(20, "# Pricing draft\n\nA first pricing sketch.", made=25),
    "ancient.md": dated(400, "# Pricing history\n\nPricing as it was."),
    "other.md": dated(1, "# Garden\n\nTomatoes and basil."),
}


async def started(start_node: NodeFactory) -> Harness:
    node = await start_node(NOTES)
    node.app.state.node.library.get("default").vault._clock = lambda: NOON
    return node


def paths(found: dict) -> list[str]:  # type: ignore[type-arg]
    return sorted(hit["path"] for hit in found["hits"])


async def test_a_time_in_the_question_filters_by_the_notes_dates(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    found = await node.ok("note_search", {"query": "pricing notes from yesterday"})
    assert paths(found) == ["recent.md"]
    yesterday = dt.datetime.combine(TODAY - dt.timedelta(days=1), dt.time())
    assert found["time"]["phrase"] == "from yesterday"
    assert found["time"]["applied"] is True
    assert found["time"]["modified_after"].startswith(yesterday.date().isoformat())
    assert found["time"]["modified_before"].startswith(TODAY.isoformat())
    recent = await node.ok("note_search", {"query": "pricing in the last 30 days"})
    assert paths(recent) == ["older.md", "recent.md"]
    assert "modified_before" not in recent["time"]


async def test_a_time_in_another_language_filters_the_same_way(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    found = await node.ok("note_search", {"query": "Pricing seit gestern"})
    assert paths(found) == ["recent.md"]
    assert (found["time"]["phrase"], found["time"]["applied"]) == ("seit gestern", True)
    month = await node.ok("note_search", {"query": "最近30天 pricing"})
    assert paths(month) == ["older.md", "recent.md"]
    assert month["time"]["phrase"] == "最近30天"


async def test_a_question_of_a_time_alone_lists_what_changed_then(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    found = await node.ok("note_search", {"query": "yesterday"})
    assert paths(found) == ["other.md", "recent.md"]
    assert found["time"]["applied"] is True


async def test_a_time_that_matches_nothing_leaves_the_whole_question_to_every_note(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    found = await node.ok("note_search", {"query": "pricing before 2000-01-01"})
    assert paths(found) == ["ancient.md", "older.md", "recent.md"]
    assert found["time"] == {
        "phrase": "before 2000-01-01",
        "applied": False,
        "dates": "updated",
        "modified_before": "2000-01-01T00:00:00+00:00",
    }
    assert "before 2000-01-01" in found["hint"]
    alone = await node.ok("note_search", {"query": "before 2000-01-01"})
    assert (alone["total"], alone["time"]["applied"]) == (0, True)
    assert alone["hint"] == "no note changed 'before 2000-01-01'"
    tagged = await node.ok("note_search", {"query": "before 2000-01-01", "tags": ["x"]})
    assert tagged["hint"] == "no note changed 'before 2000-01-01' under these filters"


async def test_an_explicit_time_wins_and_the_question_keeps_its_words(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    cutoff = (TODAY - dt.timedelta(days=10)).isoformat()
    before = await node.ok("note_search", {"query": "pricing", "modified_before": cutoff})
    assert paths(before) == ["ancient.md", "older.md"]
    both = {"query": "pricing yesterday", "modified_after": "2000-01-01"}
    found = await node.ok("note_search", both)
    assert "time" not in found
    assert paths(found) == ["ancient.md", "older.md", "recent.md"]
    fts = await node.ok("note_search", {"query": "pricing yesterday", "syntax": "fts"})
    assert ("time" not in fts, fts["total"]) == (True, 0)


async def test_passages_answer_the_question_without_its_time(start_node: NodeFactory) -> None:
    node = await started(start_node)
    found = await node.ok(
        "note_search", {"query": "what pricing tiers since last month?", "max_tokens": 200}
    )
    assert found["passages"][0]["path"] == "recent.md"
    assert "tiers" in found["passages"][0]["text"]


async def test_an_unreadable_modified_before_is_refused_with_the_forms(node: Harness) -> None:
    code, message = await node.fails("note_search", {"modified_before": "soonish"})
    assert code == "invalid_argument"
    assert "modified_before" in message
    assert "YYYY-MM-DD" in message


async def test_a_question_of_what_was_created_goes_by_the_notes_created_dates(
    start_node: NodeFactory,
) -> None:
    node = await started(start_node)
    found = await node.ok("note_search", {"query": "pricing notes created in the last 30 days"})
    assert paths(found) == ["older.md"]
    assert found["time"]["dates"] == "created"
    added = await node.ok("note_search", {"query": "pricing added yesterday"})
    assert (added["time"]["dates"], added["time"]["applied"]) == ("created", False)
    assert added["hint"].startswith("nothing created 'yesterday' matches")
