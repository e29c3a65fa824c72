"""Frontmatter (docs/design.md#note-format): only at byte 0, terminators, round trip, tags and
aliases."""

from __future__ import annotations

import string
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_core import frontmatter, yamlread
from vault_core.errors import FrontmatterError, InvalidTextError
from vault_core.frontmatter import Frontmatter, Rfc3339

HAND_WRITTEN = """\
# kept: a comment before everything
title: "Rate limiting"   # the title, quoted on purpose
aliases: ['Throttling', "Token bucket"]
tags:
  - Networking
  - '#Infra/'
created: 2024-01-02T03:04:05Z
nested:
  key: value   # a nested comment
empty:
"""


def test_a_block_counts_only_at_the_start_of_the_file() -> None:
    text = "intro\n---\ntitle: x\n---\nbody\n"
    split = frontmatter.split(text)
    assert split.yaml_text is None
    assert split.body == text


def test_a_block_closes_at_three_dashes() -> None:
    split = frontmatter.split("---\ntitle: x\n---\nbody\n")
    assert split.yaml_text == "title: x\n"
    assert split.body == "body\n"
    assert split.block_lines == 3


def test_a_block_closes_at_three_dots() -> None:
    split = frontmatter.split("---\ntitle: x\n...\nbody\n")
    assert split.yaml_text == "title: x\n"
    assert split.body == "body\n"


def test_an_unterminated_block_makes_the_whole_file_body() -> None:
    text = "---\ntitle: x\nno end here\n"
    split = frontmatter.split(text)
    assert split.yaml_text is None
    assert split.body == text


def test_a_crlf_opening_line_starts_a_block() -> None:
    split = frontmatter.split("---\r\ntitle: x\r\n---\r\nbody\r\n")
    assert split.yaml_text == "title: x\r\n"
    assert split.body == "body\r\n"


def test_four_dashes_are_no_block() -> None:
    assert frontmatter.split("----\ntitle: x\n----\n").yaml_text is None


def test_a_block_at_the_very_end_without_newline_closes() -> None:
    split = frontmatter.split("---\ntitle: x\n---")
    assert split.yaml_text == "title: x\n"
    assert split.body == ""


def test_an_empty_block_is_present_but_empty() -> None:
    fm = Frontmatter(frontmatter.split("---\n---\nbody").yaml_text)
    assert fm.present
    assert fm.error is None
    assert fm.plain() == {}


def test_an_unchanged_block_renders_byte_for_byte() -> None:
    fm = Frontmatter(HAND_WRITTEN)
    assert fm.render() == HAND_WRITTEN


def test_changing_one_field_keeps_order_comments_and_quoting() -> None:
    fm = Frontmatter(HAND_WRITTEN)
    fm.set("updated", Rfc3339("2026-01-02T03:04:05Z"))
    out = fm.render()
    assert out == HAND_WRITTEN + "updated: 2026-01-02T03:04:05Z\n"


def test_removing_a_field_keeps_the_rest_in_order() -> None:
    fm = Frontmatter(HAND_WRITTEN)
    assert fm.unset("aliases")
    out = fm.render()
    assert "aliases" not in out
    assert out.index("title") < out.index("tags") < out.index("created")
    assert "# the title, quoted on purpose" in out
    assert '"Rate limiting"' in out
    assert not fm.unset("aliases")


def test_a_timestamp_field_reads_back_as_rfc3339() -> None:
    fm = Frontmatter("created: 2024-01-02T03:04:05Z\nday: 2024-01-02\n")
    assert fm.plain() == {"created": "2024-01-02T03:04:05Z", "day": "2024-01-02"}


def test_invalid_yaml_is_reported_not_raised() -> None:
    fm = Frontmatter("title: [unclosed\n")
    assert fm.error is not None
    assert "line" in fm.error
    assert fm.plain() == {}


def test_duplicate_keys_are_reported_with_the_key() -> None:
    fm = Frontmatter("title: a\ntitle: b\n")
    assert fm.error is not None
    assert "title" in fm.error


def test_a_block_that_is_not_a_mapping_is_reported() -> None:
    fm = Frontmatter("- just\n- a list\n")
    assert fm.error is not None
    assert "key: value" in fm.error


@pytest.mark.parametrize(
    ("value", "tags"),
    [
        (["Networking", "#Infra/", "/a/b/", "x"], ["networking", "infra", "a/b", "x"]),
        ("one, #Two ,three", ["one", "two", "three"]),
        ("single", ["single"]),
        ([2024, "", None, ["nested"]], ["2024"]),
        (None, []),
        ({"a": 1}, []),
    ],
)
def test_tags_are_a_list_or_a_comma_scalar_and_are_normalised(
    value: object, tags: list[str]
) -> None:
    assert frontmatter.tag_values(value) == tags


def test_an_alias_scalar_is_one_alias_even_with_a_comma() -> None:
    assert frontmatter.alias_values("Smith, John") == ["Smith, John"]
    assert frontmatter.alias_values(["A", " B ", ""]) == ["A", "B"]


def test_join_builds_a_block_and_adds_a_missing_newline() -> None:
    assert frontmatter.join("title: x", "body\n") == "---\ntitle: x\n---\nbody\n"


def test_a_new_list_value_is_written_in_block_style_with_indented_dashes() -> None:
    fm = Frontmatter(None)
    fm.set("title", "x")
    fm.set("tags", ["a", "b"])
    assert fm.render() == "title: x\ntags:\n  - a\n  - b\n"


def test_a_source_with_unindented_dashes_keeps_that_style() -> None:
    fm = Frontmatter("tags:\n- a\n- b\n")
    fm.set("x", 1)
    assert fm.render() == "tags:\n- a\n- b\nx: 1\n"


keys = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8).filter(
    lambda k: k != "updated"
)
scalars = st.one_of(
    st.integers(-1000, 1000),
    st.booleans(),
    st.text(alphabet=string.ascii_letters + string.digits + " -_.,:#'\"é", max_size=20),
)


@given(fields=st.dictionaries(keys, st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=6))
def test_any_mapping_survives_a_write_and_read_cycle(fields: dict[str, object]) -> None:
    fm = Frontmatter(None)
    for key, value in fields.items():
        fm.set(key, value)
    again = Frontmatter(fm.render())
    assert again.error is None
    assert again.plain() == fields
    again.set("updated", Rfc3339("2026-01-02T03:04:05Z"))
    third = Frontmatter(again.render())
    assert list(third.plain())[: len(fields)] == list(fields)
    assert {k: v for k, v in third.plain().items() if k != "updated"} == fields


# ---------------------------------------------------------------------- limits


def laughs(levels: int) -> str:
    """The billion-laughs shape: each anchor a list of ten aliases of the one before."""
    lines = ["a0: &a0 [lol]"]
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_block_is_refused_before_anything_is_built() -> None:
    source = laughs(9)  # 10**9 leaves once expanded, from 400 bytes
    assert len(source) < 1024
    tracemalloc.start()
    try:
        fm = Frontmatter(source)
        plain = fm.plain()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fm.error is not None
    assert f"more than {yamlread.ALIAS_BUDGET} nodes" in fm.error
    assert "alias budget" in fm.error
    assert plain == {}
    assert peak < 1_000_000  # the expansion (gigabytes) never starts


@pytest.mark.parametrize("levels", [4, 9, 30])
def test_both_parsers_refuse_an_alias_bomb(levels: int) -> None:
    with pytest.raises(yamlread.LimitError, match="alias budget"):
        yamlread.load(laughs(levels))
    with pytest.raises(yamlread.LimitError, match="alias budget"):
        frontmatter._yaml().load(laughs(levels))


def test_a_few_anchors_reused_still_read_and_round_trip() -> None:
    source = (
        "defaults: &defaults {owner: ops, review: 30d}\n"
        "service: &svc [api, worker]\n"
        "staging: *defaults\n"
        "production: *defaults\n"
        "deploys: [*svc, *svc]\n"
    )
    fm = Frontmatter(source)
    assert fm.error is None
    assert fm.plain()["production"] == {"owner": "ops", "review": "30d"}
    assert fm.plain()["deploys"] == [["api", "worker"], ["api", "worker"]]
    fm.set("title", "Deploys")
    rendered = fm.render()
    for mark in ("&defaults", "*defaults", "*svc"):
        assert mark in rendered
    again = Frontmatter(rendered)
    assert again.error is None
    assert again.plain() == {**Frontmatter(source).plain(), "title": "Deploys"}


def test_an_alias_up_to_the_budget_is_accepted() -> None:
    leaves = ", ".join(["x"] * 99)
    source = f"base: &b [{leaves}]\n" + "".join(f"k{n}: *b\n" for n in range(49))
    fm = Frontmatter(source)  # 49 aliases of 100 nodes each: 4,900 nodes through aliases
    assert fm.error is None
    assert len(fm.plain()["k48"]) == 99


def test_an_alias_that_contains_itself_is_refused() -> None:
    fm = Frontmatter("loop: &a [x, *a]\n")
    assert fm.error is not None
    assert "never ends" in fm.error
    assert fm.plain() == {}


@pytest.mark.parametrize("shape", ["flow", "block"])
def test_nesting_past_the_depth_limit_is_unreadable_not_a_crash(shape: str) -> None:
    depth = 500
    if shape == "flow":
        source = "deep: " + "[" * depth + "]" * depth + "\n"
    else:
        source = "".join("  " * n + f"k{n}:\n" for n in range(depth)) + "  " * depth + "v\n"
    fm = Frontmatter(source)
    assert fm.error is not None
    assert f"deeper than {yamlread.MAX_DEPTH} levels" in fm.error
    assert fm.plain() == {}


def test_aliases_that_nest_past_the_depth_limit_together_are_refused() -> None:
    # Each anchor is 40 levels deep, well inside the limit; each holds the one before.
    lines = ["a0: &a0 x"]
    for n in range(1, 12):
        lines.append(f"a{n}: &a{n} " + "[" * 40 + f"*a{n - 1}" + "]" * 40)
    fm = Frontmatter("\n".join(lines) + "\n")
    assert fm.error is not None
    assert f"deeper than {yamlread.MAX_DEPTH} levels" in fm.error
    assert fm.plain() == {}


def test_a_write_that_brings_a_bomb_is_refused_naming_the_budget() -> None:
    text = frontmatter.join(laughs(9), "# Body\n")
    with pytest.raises(FrontmatterError) as caught:
        frontmatter.refuse_limits(text, "wiki/x.md")
    assert caught.value.code == "invalid_argument"
    assert "wiki/x.md" in caught.value.message
    assert f"more than {yamlread.ALIAS_BUDGET} nodes" in caught.value.message
    # Unchanged from what the note held, it is not judged again; other bad YAML is written.
    frontmatter.refuse_limits(text + "more\n", "wiki/x.md", before=text)
    frontmatter.refuse_limits("---\ntitle: [unclosed\n---\nbody\n", "wiki/x.md")


@pytest.mark.parametrize(
    ("key", "value"),
    [("title", "a\udc80"), ("tags", ["ok", "\ud83d"]), ("meta", {"k\udcff": 1}), ("k\udc80", 1)],
)
def test_a_value_with_a_lone_surrogate_is_refused_not_written_as_an_escape(
    key: str, value: object
) -> None:
    # ruamel would write it as "\uDC80", which no YAML reader takes back
    fm = Frontmatter("title: x\n")
    with pytest.raises(InvalidTextError):
        fm.set(key, value)
    assert fm.render() == "title: x\n"
