"""The read tools (docs/design.md#tools, task_list, attachment_list, daily_range) against a
real vault: results, defaults, and every error docs/design.md#errors names."""

from __future__ import annotations

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio


async def test_vault_list_counts_each_visible_vault(start_node: NodeFactory) -> None:
    node = await start_node(vaults={"team": {"a.md": "# A\n\nfour words here\n"}})
    found = await node.ok("vault_list")
    assert found["default_vault"] == "default"
    rows = {row["name"]: row for row in found["vaults"]}
    assert set(rows) == {"default", "team"}
    assert rows["default"]["notes"] == 5
    assert rows["default"]["attachments"] == 1
    assert rows["default"]["is_default"]
    assert not rows["team"]["is_default"]
    assert rows["team"]["versioned"] is True
    assert rows["team"]["has_instructions"] is False


async def test_vault_stats_reports_links_orphans_tasks_and_top_tags(node: Harness) -> None:
    stats = (await node.ok("vault_stats"))["stats"]
    assert stats["notes"] == 5
    assert stats["open_tasks"] == 1
    assert stats["broken_links"] == 0
    assert "ops (2)" in stats["top_tags"]


async def test_note_list_sorts_filters_and_pages(node: Harness) -> None:
    by_path = await node.ok("note_list", {"sort": "path"})
    assert [e["path"] for e in by_path["entries"]][:2] == [
        "attachments/diagram.png",
        "journal/2026/2026-01-01.md",
    ]
    assert by_path["total"] == 6
    wiki = await node.ok("note_list", {"prefix": "wiki", "sort": "path", "limit": 1, "offset": 1})
    assert (wiki["total"], wiki["returned"], wiki["entries"][0]["path"]) == (
        2,
        1,
        "wiki/rate-limiting.md",
    )
    by_size = await node.ok("note_list", {"sort": "size"})
    sizes = [e["bytes"] for e in by_size["entries"]]
    assert sizes == sorted(sizes, reverse=True)


async def test_note_list_glob_stars_stay_within_one_folder(node: Harness) -> None:
    assert (await node.ok("note_list", {"glob": "*.md"}))["total"] == 0
    assert (await node.ok("note_list", {"glob": "wiki/*.md"}))["total"] == 2
    assert (await node.ok("note_list", {"glob": "*/*/*.md"}))["total"] == 1
    assert (await node.ok("note_list", {"glob": "wiki/[br]*.md"}))["total"] == 2


@pytest.mark.parametrize("pattern", ["wiki/[a", "wiki/[]", "a\\"])
async def test_an_invalid_glob_is_refused_with_an_example(node: Harness, pattern: str) -> None:
    for tool in ("note_list", "note_search"):
        code, message = await node.fails(tool, {"glob": pattern})
        assert code == "invalid_argument"
        assert "invalid glob pattern" in message
        assert "wiki/*.md" in message


async def test_note_search_ranks_and_filters(node: Harness) -> None:
    found = await node.ok("note_search", {"query": "backoff"})
    assert found["hits"][0]["path"] == "wiki/backoff.md"
    assert found["hits"][0]["title"] == "Backoff"
    only_ops = await node.ok("note_search", {"query": "backoff", "tags": ["api"]})
    assert [h["path"] for h in only_ops["hits"]] == ["wiki/rate-limiting.md"]
    in_raw = await node.ok("note_search", {"query": "limits", "prefix": "raw"})
    assert [h["path"] for h in in_raw["hits"]] == ["raw/article.md"]


async def test_note_search_without_hits_points_to_other_tools(node: Harness) -> None:
    found = await node.ok("note_search", {"query": "zebra"})
    assert found["total"] == 0
    assert "vault_grep" in found["hint"]


@pytest.mark.parametrize("when", ["2020-01-01", "2020-01", "2020-01-01T00:00:00Z", "30d", "today"])
async def test_note_search_reads_every_time_form(node: Harness, when: str) -> None:
    found = await node.ok("note_search", {"modified_after": when})
    assert found["total"] == 5


async def test_note_search_in_the_future_finds_nothing(node: Harness) -> None:
    assert (await node.ok("note_search", {"modified_after": "2999-01-01"}))["total"] == 0


@pytest.mark.parametrize("when", ["yesterday-ish", "2026-13-01", "7x"])
async def test_an_unreadable_time_is_refused(node: Harness, when: str) -> None:
    code, message = await node.fails("note_search", {"modified_after": when})
    assert code == "invalid_argument"
    assert "YYYY-MM-DD" in message


@pytest.mark.parametrize("query", ['"unclosed', "a AND (b", "(", "title:"])
async def test_invalid_fts_syntax_is_explained(node: Harness, query: str) -> None:
    code, message = await node.fails("note_search", {"query": query, "syntax": "fts"})
    assert code == "invalid_argument"
    assert "FTS5" in message


@pytest.mark.parametrize(
    "query", ['"unclosed', "a AND (b", "(", "title:", "path: {{date:YYYY-MM-DD}}", "?"]
)
async def test_a_question_in_plain_words_is_never_refused(node: Harness, query: str) -> None:
    found = await node.ok("note_search", {"query": query})
    assert found["total"] >= 0


async def test_a_question_finds_the_note_that_answers_it(node: Harness) -> None:
    found = await node.ok("note_search", {"query": "How big is the bucket for rate limits?"})
    assert found["hits"][0]["path"] == "wiki/rate-limiting.md"
    assert "<<" in found["hits"][0]["snippet"]


async def test_vault_grep_finds_lines_with_context(node: Harness) -> None:
    found = await node.ok("vault_grep", {"pattern": "bucket size", "context": 2})
    assert found["truncated"] is False
    assert found["notes_scanned"] == 5
    (match,) = found["matches"]
    assert match["path"] == "wiki/rate-limiting.md"
    assert match["line"] == 11
    assert match["text"] == "Bucket size is 600 per minute."
    assert match["context"] == ["9: ## Details", "10: ", "12: ", "13: ## Open questions"]


async def test_vault_grep_honours_case_prefix_and_limit(node: Harness) -> None:
    assert not (await node.ok("vault_grep", {"pattern": "bucket size", "case_sensitive": True}))[
        "matches"
    ]
    assert (await node.ok("vault_grep", {"pattern": "e", "prefix": "raw"}))["notes_scanned"] == 1
    limited = await node.ok("vault_grep", {"pattern": "e", "limit": 2})
    assert len(limited["matches"]) == 2
    assert limited["truncated"] is True


@pytest.mark.parametrize("pattern", ["(", "[a-", "*x", "a{2,1}"])
async def test_an_invalid_regex_is_refused(node: Harness, pattern: str) -> None:
    code, message = await node.fails("vault_grep", {"pattern": pattern})
    assert code == "invalid_argument"
    assert "invalid regular expression" in message


async def test_a_pathological_regex_cannot_hold_the_node(node: Harness) -> None:
    await node.ok("note_create", {"path": "raw/aaa", "content": "a" * 50_000 + "b\n"})
    found = await node.ok("vault_grep", {"pattern": "^(a+)+$"})
    assert found["matches"] == []
    replaced = await node.ok("vault_replace", {"pattern": "^(a+)+$", "replace": "", "regex": True})
    assert replaced["notes_affected"] == 0
    code, message = await node.fails("vault_grep", {"pattern": "(a)\\1"})
    assert code == "invalid_argument"
    assert "without backreferences" in message


async def test_note_read_returns_body_hash_and_structure(node: Harness) -> None:
    note = await node.ok("note_read", {"path": "wiki/rate-limiting"})
    assert note["path"] == "wiki/rate-limiting.md"
    assert note["title"] == "Rate limiting"
    assert note["content"].startswith("# Rate limiting\n")
    assert "---" not in note["content"]
    assert note["frontmatter"] == {"title": "Rate limiting", "tags": ["ops", "api"]}
    assert [h["text"] for h in note["headings"]] == ["Rate limiting", "Details", "Open questions"]
    assert note["tags"] == ["ops", "api"]
    assert [link["target"] for link in note["links"]] == ["wiki/backoff", "Backoff"]
    assert note["tasks"] == [
        {"line": 15, "text": "measure the burst size", "done": False},
        {"line": 16, "text": "pick an algorithm", "done": True},
    ]
    assert len(note["content_hash"]) == 32


async def test_note_read_one_section_and_without_metadata(node: Harness) -> None:
    whole = await node.ok("note_read", {"path": "wiki/rate-limiting"})
    section = await node.ok(
        "note_read", {"path": "wiki/rate-limiting", "heading": "details", "with_metadata": False}
    )
    assert section["content"] == "## Details\n\nBucket size is 600 per minute.\n\n"
    assert section["content_hash"] == whole["content_hash"]
    assert "headings" not in section
    assert "tasks" not in section


async def test_note_read_errors(start_node: NodeFactory) -> None:
    node = await start_node(
        {"big.md": "x" * (4 * 1024 * 1024 + 1), "a.md": "# A\n", "dir.md/inner.md": "# in\n"}
    )
    assert (await node.fails("note_read", {"path": "nope"}))[0] == "not_found"
    assert (await node.fails("note_read", {"path": "big"}))[0] == "too_large"
    assert (await node.fails("note_read", {"path": "dir.md"}))[0] == "invalid_path"
    code, message = await node.fails("note_read", {"path": "a", "heading": "Missing"})
    assert code == "not_found"
    assert "note_outline" in message


async def test_note_outline_gives_the_shape_without_the_text(node: Harness) -> None:
    outline = await node.ok("note_outline", {"path": "wiki/backoff"})
    assert "content" not in outline
    assert outline["incoming"] == ["wiki/rate-limiting.md"]
    assert outline["outgoing"] == ["wiki/rate-limiting.md"]
    assert outline["open_tasks"] == 0
    assert outline["words"] > 0


async def test_note_backlinks_answers_for_notes_and_attachments(node: Harness) -> None:
    links = await node.ok("note_backlinks", {"path": "wiki/backoff"})
    assert {link["path"] for link in links["incoming"]} == {"wiki/rate-limiting.md"}
    assert {link["target"] for link in links["incoming"]} == {"wiki/backoff", "Backoff"}
    image = await node.ok("note_backlinks", {"path": "attachments/diagram.png"})
    assert [link["path"] for link in image["incoming"]] == ["raw/article.md"]
    never = await node.ok("note_backlinks", {"path": "not/written"})
    assert never["incoming"] == []
    assert never["path"] == "not/written.md"


async def test_note_backlinks_reports_broken_links_with_a_hint(start_node: NodeFactory) -> None:
    node = await start_node({"a.md": "# A\n\n[[nowhere]] and [[b]]\n", "b.md": "# B\n"})
    found = await node.ok("note_backlinks", {"path": "a"})
    assert found["broken"] == [{"target": "nowhere", "anchor": ""}]
    assert "note_create" in found["hint"]


async def test_note_related_ranks_linked_notes_first(node: Harness) -> None:
    found = await node.ok("note_related", {"path": "wiki/rate-limiting"})
    assert found["related"][0]["path"] == "wiki/backoff.md"
    assert (await node.fails("note_related", {"path": "nope"}))[0] == "not_found"


async def test_tag_list_counts_merged_tags(node: Harness) -> None:
    found = await node.ok("tag_list")
    assert found["tags"][0] == {"tag": "ops", "notes": 2}
    assert {t["tag"] for t in found["tags"]} >= {"ops", "api", "caching", "journal"}
    assert [t["tag"] for t in (await node.ok("tag_list", {"prefix": "#jo"}))["tags"]] == ["journal"]


async def test_task_list_filters_open_done_and_text(node: Harness) -> None:
    open_only = await node.ok("task_list")
    assert [t["text"] for t in open_only["tasks"]] == ["measure the burst size"]
    assert open_only["tasks"][0]["note_title"] == "Rate limiting"
    everything = await node.ok("task_list", {"include_done": True, "contains": "ALGO"})
    assert [t["done"] for t in everything["tasks"]] == [True]
    assert (await node.ok("task_list", {"prefix": "raw"}))["count"] == 0


async def test_attachment_list_counts_references(node: Harness) -> None:
    found = await node.ok("attachment_list")
    assert found["attachments"][0]["path"] == "attachments/diagram.png"
    assert found["attachments"][0]["references"] == 1
    assert (await node.ok("attachment_list", {"prefix": "wiki"}))["count"] == 0
    assert (await node.ok("attachment_list", {"prefix": ""}))["count"] == 1


def laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol]"] + [
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, levels + 1)
    ]
    return "---\n" + "\n".join(lines) + "\n---\n"


async def test_a_note_holding_one_word_800000_times_is_searched_with_a_snippet(
    start_node: NodeFactory,
) -> None:
    # Its snippet was FTS5's over the whole note: minutes of one worker per search.
    planted = "# Big\n\n" + "word " * 800_000
    node = await start_node({"wiki/big.md": planted, "wiki/small.md": "# Small\n\na word\n"})
    found = await node.ok("note_search", {"query": "word"})
    assert found["total"] == 2
    snippets = {hit["path"]: hit["snippet"] for hit in found["hits"]}
    assert snippets["wiki/big.md"].startswith("# Big\n\n<<word>> <<word>>")
    assert snippets["wiki/small.md"] == "# Small\n\na <<word>>\n"


async def test_an_alias_bomb_is_reported_and_the_body_is_read(start_node: NodeFactory) -> None:
    node = await start_node({"wiki/bomb.md": laughs(9) + "# Bomb\n\nThe body survives.\n"})
    note = await node.ok("note_read", {"path": "wiki/bomb"})
    assert note["content"] == "# Bomb\n\nThe body survives.\n"
    assert note["frontmatter"] == {}
    assert "alias budget" in note["frontmatter_error"]
    assert note["title"] == "Bomb"
    outline = await node.ok("note_outline", {"path": "wiki/bomb"})
    assert outline["frontmatter"] == {}
    assert [h["text"] for h in outline["headings"]] == ["Bomb"]
    found = await node.ok("note_search", {"query": "survives"})
    assert [hit["path"] for hit in found["hits"]] == ["wiki/bomb.md"]


async def test_a_few_anchors_reused_read_as_their_values(start_node: NodeFactory) -> None:
    block = "---\nowner: &who ops\nreviewers: [*who, *who]\n---\n# Shared\n"
    node = await start_node({"wiki/shared.md": block})
    note = await node.ok("note_read", {"path": "wiki/shared"})
    assert note["frontmatter"] == {"owner": "ops", "reviewers": ["ops", "ops"]}
    assert "frontmatter_error" not in note
