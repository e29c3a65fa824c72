"""A parsed note: title, tags, aliases, structure line numbers, bad input that stays readable."""

from __future__ import annotations

from vault_core import note

NOTE = """\
---
title: Rate limiting
tags: [Networking, infra]
tag: ops
aliases:
  - Throttling
---
# Heading one

Some text with #Inline/Tag and #networking again.

```bash
# not a heading
- [ ] not a task
#include <stdio.h>
[[Not A Link]]
```

- [ ] open task
- [x] done task
"""


def test_title_comes_from_frontmatter_first() -> None:
    assert note.parse("wiki/x.md", NOTE.encode()).title == "Rate limiting"


def test_title_falls_back_to_the_first_level_one_heading_then_the_file_name() -> None:
    assert note.parse("wiki/x.md", b"## Sub\n# Main\n").title == "Main"
    assert note.parse("wiki/My Note.md", b"no heading\n").title == "My Note"
    assert note.parse("wiki/x.md", b"---\ntitle: ''\n---\n# H\n").title == "H"


def test_tags_unite_frontmatter_tag_and_inline_tags_normalised() -> None:
    parsed = note.parse("wiki/x.md", NOTE.encode())
    assert parsed.tags == ["networking", "infra", "ops", "inline/tag"]


def test_aliases_are_read_from_aliases_and_alias() -> None:
    parsed = note.parse("x.md", b"---\naliases: [A, B]\nalias: C\n---\n")
    assert parsed.aliases == ["A", "B", "C"]


def test_structure_inside_code_fences_is_ignored() -> None:
    parsed = note.parse("wiki/x.md", NOTE.encode())
    assert [h.text for h in parsed.headings] == ["Heading one"]
    assert [t.text for t in parsed.tasks] == ["open task", "done task"]
    assert parsed.links == []
    assert "include" not in parsed.tags


def test_task_line_numbers_match_the_file_including_frontmatter() -> None:
    parsed = note.parse("wiki/x.md", NOTE.encode())
    file_lines = NOTE.split("\n")
    for task in parsed.tasks:
        assert task.text in file_lines[task.line - 1]
    assert [(t.line, t.done) for t in parsed.tasks] == [(19, False), (20, True)]
    assert parsed.headings[0].line == 8


def test_the_hash_covers_the_whole_file_and_the_body_excludes_frontmatter() -> None:
    parsed = note.parse("wiki/x.md", NOTE.encode())
    assert parsed.body.startswith("# Heading one")
    assert parsed.content_hash == note.parse("y.md", NOTE.encode()).content_hash
    assert (
        parsed.content_hash != note.parse("y.md", NOTE.replace("ops", "dev").encode()).content_hash
    )
    assert parsed.size == len(NOTE.encode())


def test_invalid_frontmatter_keeps_the_note_readable() -> None:
    parsed = note.parse("x.md", b"---\ntitle: [broken\n---\n# Still here #tag\n")
    assert parsed.frontmatter_error is not None
    assert parsed.metadata() == {}
    assert parsed.title == "Still here #tag"
    assert parsed.tags == ["tag"]
    assert parsed.body == "# Still here #tag\n"


def test_a_crlf_note_parses_like_its_lf_twin() -> None:
    crlf = note.parse("x.md", NOTE.replace("\n", "\r\n").encode())
    lf = note.parse("x.md", NOTE.encode())
    assert crlf.title == lf.title
    assert crlf.tags == lf.tags
    assert crlf.tasks == lf.tasks
    assert crlf.headings == lf.headings


def test_a_bom_before_the_frontmatter_is_tolerated() -> None:
    parsed = note.parse("x.md", "\ufeff---\ntitle: Bom\n---\nbody\n".encode())
    assert parsed.title == "Bom"
    assert parsed.body == "body\n"


def test_words_count_whitespace_separated_body_words() -> None:
    assert note.parse("x.md", b"---\ntitle: a b c\n---\none two\nthree\n").words == 3


def test_non_latin_names_and_text_parse() -> None:
    parsed = note.parse("日本/メモ.md", "# 見出し\n#日本語タグ と [[別のメモ]]\n".encode())
    assert parsed.title == "見出し"
    assert parsed.tags == ["日本語タグ"]
    assert parsed.links[0].target == "別のメモ"
    assert note.stem("日本/メモ.md") == "メモ"


def test_an_alias_bomb_in_the_frontmatter_leaves_the_body_readable() -> None:
    lines = ["a0: &a0 [lol]"] + [
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 10)
    ]
    text = "---\n" + "\n".join(lines) + "\n---\n# Still here\n\nThe body #tag\n"
    parsed = note.parse("x.md", text.encode())
    assert parsed.frontmatter_error is not None
    assert "alias budget" in parsed.frontmatter_error
    assert parsed.metadata() == {}
    assert (parsed.title, parsed.tags) == ("Still here", ["tag"])
    assert parsed.body == "# Still here\n\nThe body #tag\n"
