"""Structure of a note body (docs/design.md#note-format): headings, links, tags, tasks, code."""

from __future__ import annotations

import pytest

from vault_core import markdown
from vault_core.markdown import Heading, Link, Task


def wiki(target: str, anchor: str = "", alias: str = "", *, embed: bool = False) -> Link:
    return Link(target, anchor, alias, wiki=True, embed=embed, line=1)


def md(target: str, anchor: str = "", *, embed: bool = False) -> Link:
    return Link(target, anchor, "", wiki=False, embed=embed, line=1)


def links(body: str) -> list[Link]:
    return markdown.parse(body).links


def tags(body: str) -> list[str]:
    return markdown.parse(body).tags


def headings(body: str) -> list[tuple[int, str]]:
    return [(h.level, h.text) for h in markdown.parse(body).headings]


# ---------------------------------------------------------------- headings


def test_atx_headings_of_levels_one_to_six_are_recognised_with_their_lines() -> None:
    body = "# One\n## Two\n### Three\n#### Four\n##### Five\n###### Six\n####### Seven\n"
    assert markdown.parse(body).headings == [
        Heading(1, "One", 1),
        Heading(2, "Two", 2),
        Heading(3, "Three", 3),
        Heading(4, "Four", 4),
        Heading(5, "Five", 5),
        Heading(6, "Six", 6),
    ]


def test_closing_hashes_and_trailing_spaces_are_stripped() -> None:
    assert headings("## Closed ##\n### Spaced   ###   \n# Tight #\n") == [
        (2, "Closed"),
        (3, "Spaced"),
        (1, "Tight"),
    ]


def test_a_hash_that_is_part_of_the_last_word_stays() -> None:
    assert headings("# C#\n## Learn F# today\n") == [(1, "C#"), (2, "Learn F# today")]


def test_a_tag_at_the_start_of_a_line_is_a_tag_not_a_heading() -> None:
    structure = markdown.parse("#project\n#todo/later rest\n")
    assert structure.headings == []
    assert structure.tags == ["project", "todo/later"]


def test_a_shell_prompt_inside_a_fence_is_not_a_heading() -> None:
    body = "```sh\n# ls -la\n# rm -rf build\n```\n# Real\n"
    assert headings(body) == [(1, "Real")]


def test_an_indented_hash_line_is_not_a_heading() -> None:
    assert headings("    # code by indentation\n") == []


# ---------------------------------------------------------------- wiki-links


@pytest.mark.parametrize(
    ("source", "link"),
    [
        ("[[Note]]", wiki("Note")),
        ("[[Note#Heading]]", wiki("Note", "Heading")),
        ("[[Note|the alias]]", wiki("Note", alias="the alias")),
        ("[[Note#Heading|the alias]]", wiki("Note", "Heading", "the alias")),
        ("[[#Heading]]", wiki("", "Heading")),
        ("[[#^block]]", wiki("", "^block")),
        ("[[Note#^block|alias]]", wiki("Note", "^block", "alias")),
        ("[[folder/Sub Note]]", wiki("folder/Sub Note")),
        ("![[diagram.png]]", wiki("diagram.png", embed=True)),
        ("![[Note#Section]]", wiki("Note", "Section", embed=True)),
        ("| cell | [[Note\\|alias]] |", wiki("Note", alias="alias")),
        ("| cell | [[Note#H\\|alias]] |", wiki("Note", "H", "alias")),
    ],
)
def test_a_wiki_link_splits_into_target_anchor_and_alias(source: str, link: Link) -> None:
    assert links(source) == [link]


def test_several_links_on_a_line_come_in_order() -> None:
    assert links("See [[A]], then ![[b.png]] and [c](c.md).") == [
        wiki("A"),
        wiki("b.png", embed=True),
        md("c.md"),
    ]


# ---------------------------------------------------------------- Markdown links


@pytest.mark.parametrize(
    ("source", "link"),
    [
        ("[a](note.md)", md("note.md")),
        ("[a](wiki/My%20Note.md)", md("wiki/My Note.md")),
        ("[a](<My Note.md>)", md("My Note.md")),
        ("[a](<My%20Note.md>)", md("My Note.md")),
        ('[a](note.md "A title")', md("note.md")),
        ("[a](note.md 'A title')", md("note.md")),
        ("[a](note.md#Some%20Heading)", md("note.md", "Some Heading")),
        ("![chart](attachments/chart.png)", md("attachments/chart.png", embed=True)),
        ("[a [nested] text](note.md)", md("note.md")),
    ],
)
def test_a_markdown_link_to_a_local_file_is_decoded(source: str, link: Link) -> None:
    assert links(source) == [link]


@pytest.mark.parametrize(
    "source",
    [
        "[site](https://example.com/page)",
        "[site](http://example.com/a#frag)",
        "[mail](mailto:someone@example.com)",
        "[call](tel:+49301234)",
        "[up](#anchor)",
        "[empty]()",
    ],
)
def test_external_urls_mail_phone_and_pure_anchors_are_skipped(source: str) -> None:
    assert links(source) == []


# ---------------------------------------------------------------- inline tags


def test_inline_tags_start_with_a_letter_and_allow_slash_and_dash() -> None:
    assert tags("Tagged #idea, #project/alpha and #to-do; also #Ünïcode.") == [
        "idea",
        "project/alpha",
        "to-do",
        "Ünïcode",
    ]


def test_a_tag_may_be_64_characters_but_not_65() -> None:
    longest = "a" + "b" * 63
    assert tags(f"#{longest} #{longest}c") == [longest]


@pytest.mark.parametrize(
    "source",
    [
        "issue #123",
        "a#b",
        "`#include <stdio.h>`",
        "see https://example.com/page#section",
        "[[Note#heading]]",
        "[text](note.md#heading)",
        "## heading",
        "# ",
    ],
)
def test_things_that_look_like_tags_are_not_tags(source: str) -> None:
    assert tags(source) == []


def test_an_include_line_in_a_code_block_is_not_a_tag() -> None:
    assert tags("```c\n#include <stdio.h>\n```\n#real\n") == ["real"]


def test_tags_keep_the_spelling_and_order_they_have_in_the_text() -> None:
    assert tags("#Beta #alpha #Beta") == ["Beta", "alpha", "Beta"]


# ---------------------------------------------------------------- tasks


def test_tasks_with_each_bullet_and_state_are_recognised() -> None:
    body = "- [ ] open\n* [x] done\n+ [X] also done\n  - [ ] nested\n- [y] not a task\n-[ ] no\n"
    assert markdown.parse(body).tasks == [
        Task(1, "open", False, ""),
        Task(2, "done", True, ""),
        Task(3, "also done", True, ""),
        Task(4, "nested", False, "  "),
    ]


def test_task_and_heading_lines_are_shifted_by_the_frontmatter_offset() -> None:
    structure = markdown.parse("# Title\n\n- [ ] first\n\n\t- [x] second\n", line_offset=4)
    assert structure.headings == [Heading(1, "Title", 5)]
    assert structure.tasks == [Task(7, "first", False, ""), Task(9, "second", True, "\t")]


def test_link_lines_are_shifted_by_the_frontmatter_offset() -> None:
    assert [link.line for link in markdown.parse("x\n[[A]]\n", line_offset=3).links] == [5]


def test_an_empty_task_has_empty_text() -> None:
    assert markdown.parse("- [ ] \n").tasks == [Task(1, "", False, "")]


# ---------------------------------------------------------------- code hides structure

FENCED = "[[Hidden]]\n#hidden\n- [ ] hidden task\n# Hidden heading\n"


@pytest.mark.parametrize(
    ("opening", "closing"),
    [("```", "```"), ("~~~", "~~~"), ("```python", "```"), ("````", "````"), ("   ```", "```")],
)
def test_everything_inside_fenced_code_is_ignored(opening: str, closing: str) -> None:
    structure = markdown.parse(f"{opening}\n{FENCED}{closing}\n[[Shown]] #shown\n")
    assert structure.links == [Link("Shown", "", "", wiki=True, embed=False, line=7)]
    assert structure.tags == ["shown"]
    assert structure.tasks == []
    assert structure.headings == []


def test_a_fence_closes_only_with_its_own_character_and_at_least_its_length() -> None:
    body = "````\n```\n~~~~\n[[Hidden]]\n````\n[[Shown]]\n"
    assert [link.target for link in links(body)] == ["Shown"]


def test_a_backtick_line_with_a_backtick_in_its_info_is_not_a_fence() -> None:
    assert headings("``` not `a fence\n# Heading\n") == [(1, "Heading")]


def test_a_fence_indented_in_a_list_item_hides_its_content() -> None:
    body = "- step one\n    ```sh\n    # ls\n    [[Hidden]]\n    ```\n- [ ] step two\n"
    structure = markdown.parse(body)
    assert structure.headings == []
    assert structure.links == []
    assert structure.tasks == [Task(6, "step two", False, "")]


def test_an_unclosed_fence_hides_the_rest_of_the_note() -> None:
    structure = markdown.parse("[[Before]]\n```\n[[After]]\n# Heading\n- [ ] task\n")
    assert [link.target for link in structure.links] == ["Before"]
    assert structure.headings == []
    assert structure.tasks == []


def test_a_fence_inside_a_callout_ends_when_the_callout_ends() -> None:
    body = "> [!example]\n> ```md\n> [[Hidden]]\n> # Hidden\nAfter [[Shown]]\n# Heading\n"
    structure = markdown.parse(body)
    assert [link.target for link in structure.links] == ["Shown"]
    assert structure.headings == [Heading(1, "Heading", 6)]


def test_a_fence_inside_a_callout_closes_with_a_quoted_fence() -> None:
    body = "> ```\n> [[Hidden]]\n> ```\n> [[Shown]]\n"
    assert [link.target for link in links(body)] == ["Shown"]


def test_a_quoted_fence_inside_a_plain_code_block_does_not_close_it() -> None:
    body = "```markdown\n> ```\n> [[Example]]\n> ```\n```\n[[Real]]\n"
    assert [link.target for link in links(body)] == ["Real"]
    assert [line.code for line in markdown.lines(body)] == [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
    ]


def test_lines_reports_each_line_with_its_index_and_code_flag() -> None:
    assert list(markdown.lines("a\r\n```\nb\n```\nc")) == [
        markdown.Line(0, "a", code=False),
        markdown.Line(1, "```", code=True),
        markdown.Line(2, "b", code=True),
        markdown.Line(3, "```", code=True),
        markdown.Line(4, "c", code=False),
    ]


@pytest.mark.parametrize(
    "source",
    [
        "`[[Example]]` and `#tag` and `[x](y.md)`",
        "``[[Two]] ` backtick``",
        "text ```[[Three]]``` text",
    ],
)
def test_links_and_tags_inside_inline_code_spans_are_ignored(source: str) -> None:
    structure = markdown.parse(source)
    assert structure.links == []
    assert structure.tags == []


def test_text_after_an_inline_code_span_is_still_parsed() -> None:
    assert links("`[[Example]]` then [[Real]]") == [wiki("Real")]


def test_an_unmatched_backtick_hides_nothing() -> None:
    assert links("a ` stray [[Real]]") == [wiki("Real")]


def test_strip_code_spans_keeps_every_other_character_in_place() -> None:
    assert markdown.strip_code_spans("a `b` c ``d`e`` f") == "a     c         f"
    assert markdown.strip_code_spans("no code") == "no code"


def test_embeds_side_by_side_and_after_a_link_are_each_an_embed() -> None:
    found = markdown.parse("[[a]]![[b]]![[c]] x![[d]] ![[e\n[[f]]")
    assert [(link.target, link.embed, link.line) for link in found.links] == [
        ("a", False, 1),
        ("b", True, 1),
        ("c", True, 1),
        ("d", True, 1),
        ("f", False, 2),
    ]


def test_an_embed_is_blanked_with_its_bang_before_tags_are_looked_for() -> None:
    assert markdown.parse("![[note#tag]]!#real").tags == ["real"]
