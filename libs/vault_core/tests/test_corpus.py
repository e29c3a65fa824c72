"""Every note of the real Obsidian Help vault parses, and every wiki-link in it is found.

The independent count comes from markdown-it-py, a CommonMark parser: it knows
fences, code spans, escapes and containers by other means than ours do.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from markdown_it import MarkdownIt

from vault_core import note
from vault_core.testing import corpus_dir

CORPUS = corpus_dir()
_WIKI = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_md = MarkdownIt("commonmark").enable("table").disable("text_join")


def corpus_notes() -> list[Path]:
    return sorted(CORPUS.rglob("*.md"))


def oracle_wiki_links(body: str) -> Counter[str]:
    """Wiki-links in text tokens only; escaped brackets (`\\[\\[`) are literal, not links."""
    found: Counter[str] = Counter()
    for token in _md.parse(body):
        if token.type != "inline" or not token.children:
            continue
        text = "".join(_visible(child) for child in token.children)
        for match in _WIKI.finditer(text):
            found[_normal(match.group(1).replace("\\|", "|"))] += 1
    return found


def _visible(child: object) -> str:
    kind, content = getattr(child, "type", ""), getattr(child, "content", "")
    if kind == "text":
        return str(content)
    if kind == "text_special":  # an escaped character: never part of link syntax
        return "\x00"
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    return " "


def _normal(inner: str) -> str:
    target, _, alias = inner.partition("|")
    target, _, anchor = target.partition("#")
    return f"{target.strip()}#{anchor.strip()}|{alias.strip()}"


def test_the_corpus_is_there_and_big_enough() -> None:
    assert len(corpus_notes()) > 150


def test_every_corpus_note_parses_without_error() -> None:
    for path in corpus_notes():
        rel = path.relative_to(CORPUS).as_posix()
        parsed = note.parse(rel, path.read_bytes())
        assert parsed.frontmatter_error is None, rel
        assert parsed.title
        _ = (parsed.tags, parsed.aliases, parsed.tasks, parsed.headings)


def test_every_wiki_link_of_the_corpus_is_found() -> None:
    total = 0
    for path in corpus_notes():
        rel = path.relative_to(CORPUS).as_posix()
        parsed = note.parse(rel, path.read_bytes())
        ours = Counter(f"{lk.target}#{lk.anchor}|{lk.alias}" for lk in parsed.links if lk.wiki)
        assert ours == oracle_wiki_links(parsed.body), rel
        total += sum(ours.values())
    assert total > 1500
