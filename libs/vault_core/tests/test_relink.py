"""Link rewriting helpers: replacements outside code only, anchors and aliases kept."""

from __future__ import annotations

import re

from vault_core.ops import relink as links


def rewrite(text: str, old: str, new: str) -> tuple[str, int]:
    update = links.Update("x.md", {(old, new): 0})
    result = links.rewrite(update)(text, True)
    return result, update.counts[(old, new)]


def test_a_wiki_link_keeps_its_anchor_alias_and_embed() -> None:
    text = "[[a/b]] [[a/b#H|x]] ![[a/b]] [[a/bc]] [[a/b\\|t]]\n"
    result, count = rewrite(text, "[[a/b", "[[z/y")
    assert result == "[[z/y]] [[z/y#H|x]] ![[z/y]] [[a/bc]] [[z/y\\|t]]\n"
    assert count == 4


def test_markdown_links_are_rewritten_plain_and_percent_encoded() -> None:
    text = "[x](My Note.md) [y](My%20Note.md#part) [z](<My Note.md>)\n"
    result, count = rewrite(text, "(My Note.md", "(New Home.md")
    assert result == "[x](New Home.md) [y](New%20Home.md#part) [z](<New Home.md>)\n"
    assert count == 3


def test_code_and_frontmatter_are_never_touched() -> None:
    text = '---\nrel: "[[a]]"\n---\n`[[a]]` [[a]]\n```\n[[a]]\n```\n'
    result, count = rewrite(text, "[[a", "[[b")
    assert result == '---\nrel: "[[a]]"\n---\n`[[a]]` [[b]]\n```\n[[a]]\n```\n'
    assert count == 1


def test_rewrite_outside_code_replaces_right_to_left_in_a_line() -> None:
    pattern = re.compile(r"#(tag)\b")
    result, count = links.rewrite_outside_code(
        "#tag and `#tag` and #tag\n", pattern.finditer, lambda m: "#other"
    )
    assert result == "#other and `#tag` and #other\n"
    assert count == 2


def test_rows_show_each_replacement_with_its_count() -> None:
    update = links.Update("n.md", {("[[a", "[[b"): 2, ("(a.md", "(b.md"): 1})
    assert update.rows() == [
        {"path": "n.md", "from": "[[a", "to": "[[b", "count": 2},
        {"path": "n.md", "from": "(a.md", "to": "(b.md", "count": 1},
    ]
    update.error = "hash_mismatch"
    assert all(row["error"] == "hash_mismatch" for row in update.rows())
