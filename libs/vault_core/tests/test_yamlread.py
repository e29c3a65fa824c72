"""yamlread: libyaml reads frontmatter to the same values as ruamel's round-trip loader."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pytest
import yaml
from hypothesis import given, note, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import TaggedScalar

from vault_core import frontmatter, yamlread
from vault_core.frontmatter import Frontmatter
from vault_core.testing import corpus_dir

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)


def ruamel_load(text: str) -> Any:
    """The loader frontmatter.py writes with (YAML 1.2, round trip, the same budgets)."""
    return frontmatter._yaml().load(text)


def plain(value: Any) -> Any:
    """ruamel's and PyYAML's values as comparable plain data: a float by its bits (so NaN
    and -0.0 compare), a timestamp by its fields and offset, a type never lost (1 vs True),
    a mapping as its pairs in order."""
    if isinstance(value, TaggedScalar):
        return ("str", str(value.value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", float(value).hex())
    if isinstance(value, str):
        return ("str", str(value))
    if isinstance(value, dt.datetime):
        fields = dt.datetime(*value.timetuple()[:6], value.microsecond)
        return ("datetime", fields, value.utcoffset())
    if isinstance(value, dt.date):
        return ("date", dt.date(value.year, value.month, value.day))
    if isinstance(value, dict):
        return ("map", [(plain(k), plain(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return ("seq", [plain(v) for v in value])
    if value is None:
        return ("null",)
    raise AssertionError(f"no plain form for {type(value).__name__}")


def both(text: str) -> tuple[Any, Any]:
    return plain(yamlread.load(text)), plain(ruamel_load(text))


# ---------------------------------------------------------------- the scalars, one by one

SCALARS = [
    ("1_000", 1000),
    ("1_000_000", 1_000_000),
    ("1_000.5", 1000.5),
    ("685_230.15", 685230.15),
    ("0b101", 5),
    ("-0b11", -3),
    ("0b1_0", 2),
    ("-0x1F", -31),
    ("+0x1F", 31),
    ("0x1F_FF", 0x1FFF),
    ("0o17", 15),
    ("-0o17", -15),
    ("017", 17),  # YAML 1.2: a leading zero is not octal
    ("-017", -17),
    ("+12", 12),
    ("-0", 0),
    (".inf", math.inf),
    ("+.inf", math.inf),
    ("-.Inf", -math.inf),
    (".NaN", math.nan),
    (".nan", math.nan),
    ("1e3", 1000.0),
    ("1.0e+3", 1000.0),
    ("1.5e-3", 0.0015),
    ("3.", 3.0),
    ("-.5", -0.5),
    ("2026-01-02", dt.date(2026, 1, 2)),
    ("2026-01-02T03:04:05Z", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("2026-01-02t03:04:05", dt.datetime(2026, 1, 2, 3, 4, 5)),
    ("2026-01-02 03:04:05", dt.datetime(2026, 1, 2, 3, 4, 5)),
    ("2026-1-2 3:04:05 -5", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(-HOUR * 5))),
    ("2026-01-02T03:04:05.5+01:00",
     dt.datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=dt.timezone(HOUR))),
    ("~", None),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    ("", None),
    ("True", True),
    ("true", True),
    ("FALSE", False),
    # YAML 1.1 spellings ruamel's 1.2 reading keeps as text
    ("yes", "yes"),
    ("no", "no"),
    ("on", "on"),
    ("off", "off"),
    ("y", "y"),
    ("tRue", "tRue"),
    ("nULL", "nULL"),
    ("0X1F", "0X1F"),
    ("0B101", "0B101"),
    (".5e3", ".5e3"),  # a mantissa without digits before the dot needs a signed exponent
    ("1_0e1_0", "1_0e1_0"),
    ("2026-1-2", "2026-1-2"),  # a date alone has two-digit months and days
    ("1:20", "1:20"),  # no sexagesimal numbers in 1.2
    ("NaN", "NaN"),
    ("inf", "inf"),
    ("_1", "_1"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), SCALARS)
def test_a_scalar_reads_as_ruamel_reads_it(text: str, expected: Any) -> None:
    ours, theirs = both(f"k: {text}\n")
    assert ours == theirs == plain({"k": expected})


def test_a_fraction_past_microseconds_is_rounded_as_ruamel_rounds_it() -> None:
    text = "a: 2026-01-02T03:04:05.1234567\nb: 2026-12-31T23:59:59.9999995Z\n"
    assert yamlread.load(text) == {
        "a": dt.datetime(2026, 1, 2, 3, 4, 5, 123457),
        "b": dt.datetime(2027, 1, 1, tzinfo=UTC),
    }
    assert both(text)[0] == both(text)[1]


@pytest.mark.parametrize("text", ["2026-02-30", "2026-13-01", "2026-01-02T24:00:00"])
def test_a_timestamp_that_does_not_exist_is_a_yaml_error_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match=r"out of range|must be in"):
        ruamel_load(f"d: {text}\n")  # ruamel: a bare ValueError
    with pytest.raises(yamlread.YAMLError) as caught:
        yamlread.load(f"d: {text}\n")
    assert yamlread.describe(caught.value).startswith(f'"{text}" is not a valid timestamp (')
    assert "quote it to keep it as text at line 1, column 4" in yamlread.describe(caught.value)


def test_a_note_dated_on_a_day_that_does_not_exist_has_unreadable_frontmatter() -> None:
    fm = Frontmatter("title: x\ndue: 2026-02-30\n")
    assert fm.error is not None
    assert '"2026-02-30" is not a valid timestamp (day is out of range for month)' in fm.error
    assert fm.plain() == {}


@pytest.mark.parametrize("text", ["+_", "-_", "0x_", "0b_", "0o_", "._"])
def test_a_number_without_digits_is_a_yaml_error_where_ruamel_fails(text: str) -> None:
    with pytest.raises((IndexError, ValueError)):
        ruamel_load(f"k: {text}\n")
    with pytest.raises(yamlread.YAMLError, match=re.escape(f'"{text}" is not a valid number')):
        yamlread.load(f"k: {text}\n")


def test_an_explicit_tag_builds_its_type_and_an_unknown_tag_keeps_the_value() -> None:
    text = 'a: !!str 0x1F\nb: !!int "12"\nc: !!float 1\nd: !todo x\ne: !t [1, 0x1F]\nf: [<<, =]\n'
    assert yamlread.load(text) == {
        "a": "0x1F", "b": 12, "c": 1.0, "d": "x", "e": [1, 31], "f": ["<<", "="],
    }  # fmt: skip
    ours, theirs = both(text)
    assert ours == theirs


# ---------------------------------------------------------------- merge keys


def merged(text: str) -> dict[str, Any]:
    ours, theirs = both(text)
    assert ours == theirs  # in order too: own keys first, then the merged ones
    return dict(yamlread.load(text)["b"])


def test_a_merge_key_brings_an_anchored_mapping_in_and_own_keys_win() -> None:
    assert merged("a: &x {p: 1, q: 1}\nb:\n  <<: *x\n  q: 2\n") == {"p": 1, "q": 2}


def test_in_a_merged_list_the_earlier_mapping_wins() -> None:
    text = "x: &x {p: 1, s: 0}\ny: &y {p: 9, r: 8}\nb:\n  <<: [*x, *y]\n  s: 2\n"
    assert list(merged(text).items()) == [("s", 2), ("p", 1), ("r", 8)]


def test_a_repeated_merge_key_is_refused_as_ruamel_refuses_it() -> None:
    text = "a: &x {p: 1}\nb:\n  <<: *x\n  <<: {z: 1}\n"
    with pytest.raises(yamlread.YAMLError, match='duplicate merge key "<<"'):
        yamlread.load(text)
    with pytest.raises(Exception, match="duplicate merge key"):
        ruamel_load(text)


def test_a_merge_of_nothing_may_repeat_and_a_merged_duplicate_is_refused() -> None:
    assert merged("a: 1\nb:\n  <<: []\n  <<: {p: 1}\n") == {"p": 1}
    with pytest.raises(yamlread.YAMLError, match='duplicate key "p"'):
        yamlread.load("b:\n  <<: {p: 1, p: 2}\n")


def test_a_quoted_double_less_than_is_a_plain_key_beside_a_merge() -> None:
    assert merged('a: &x {p: 1}\nb:\n  <<: *x\n  "<<": {z: 1}\n') == {"p": 1, "<<": {"z": 1}}


def test_merging_aliases_still_counts_against_the_alias_budget() -> None:
    lines = ["l0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, 5)]
    lines.append("b:\n  <<: *l0\n  all: *l4")
    with pytest.raises(yamlread.LimitError, match="alias budget"):
        yamlread.load("\n".join(lines) + "\n")


# ---------------------------------------------------------------- differential, generated

SIGNS = st.sampled_from(["", "", "+", "-"])


def underscored(digits: str, draw: st.DrawFn) -> str:
    """Underscores anywhere after the first character, doubled or trailing too."""
    spots = draw(st.lists(st.integers(1, len(digits)), max_size=3))
    for spot in sorted(spots, reverse=True):
        digits = digits[:spot] + "_" + digits[spot:]
    return digits


@st.composite
def integers(draw: st.DrawFn) -> str:
    prefix, alphabet = draw(st.sampled_from([
        ("", "0123456789"), ("0", "01234567"), ("0b", "01"), ("0o", "01234567"),
        ("0x", "0123456789abcdefABCDEF"), ("0X", "0123456789"), ("0B", "01"), ("0o", "89"),
    ]))  # fmt: skip
    digits = draw(st.text(alphabet, min_size=1, max_size=8))
    spelled = prefix + underscored(digits, draw)
    if draw(st.booleans()):
        spelled = spelled[: len(prefix)] + "_" + spelled[len(prefix) :]
    return draw(SIGNS) + spelled


@st.composite
def floats(draw: st.DrawFn) -> str:
    whole = draw(st.text("0123456789", max_size=4))
    part = draw(st.text("0123456789", max_size=4))
    mantissa = draw(st.sampled_from([f"{whole}.{part}", f"{whole}.", f".{part}", whole]))
    mantissa = underscored(mantissa, draw) if mantissa else mantissa
    exponent = draw(st.one_of(st.just(""), st.builds(
        "{}{}{}".format, st.sampled_from("eE"), st.sampled_from(["", "+", "-"]),
        st.text("0123456789", min_size=1, max_size=3),
    )))  # fmt: skip
    special = st.sampled_from([
        ".inf", ".Inf", ".INF", "+.inf", "-.Inf", ".nan", ".NaN", ".NAN", "-.nan", ".nAn", "inf",
    ])  # fmt: skip
    return draw(st.one_of(st.just(draw(SIGNS) + mantissa + exponent), special)) or "0."


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    def number(low: int, high: int, width: str) -> str:
        return format(draw(st.integers(low, high)), width)

    width = st.sampled_from(["02", "d"])
    stamp = f"{number(1970, 2100, '04')}-{number(0, 13, draw(width))}-{number(0, 32, draw(width))}"
    if draw(st.booleans()):
        return stamp
    stamp += draw(st.sampled_from(["T", "t", " ", "  "])) + number(0, 24, draw(width))
    stamp += f":{number(0, 59, '02')}:{number(0, 60, '02')}"
    stamp += draw(st.sampled_from(["", ".", f".{draw(st.text('0123456789', max_size=9))}"]))
    zone = st.builds(
        "{}{}{}".format, st.sampled_from(["+", "-"]), st.sampled_from(["0", "5", "05", "14", "24"]),
        st.sampled_from(["", ":00", ":30"]),
    )  # fmt: skip
    return stamp + draw(st.sampled_from(["", " "])) + draw(st.sampled_from(["", "Z"]) | zone)


WORDS = st.sampled_from([
    "true", "True", "TRUE", "false", "False", "FALSE", "tRue", "yes", "Yes", "no", "NO", "on",
    "off", "y", "n", "~", "null", "Null", "NULL", "nULL", "<<", "=", "-", "x-1", "a b",
    "1:20", "v1.2.3", "2026-01", "0x", "0o", "0b", "1_", "_", "1e", "e3", "1.2.3", "..",
])  # fmt: skip
TEXT = st.text(
    st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"], exclude_characters="\\'\""),
    max_size=12,
)
TOKENS = st.text("0123456789_+-.eExobXOBabcdefABCDEFTtZ", min_size=1, max_size=10)


def quoted(text: str, style: str) -> str:
    if style == "'":
        return "'" + text.replace("'", "''") + "'"
    return '"' + text + '"'


SCALAR = st.one_of(
    integers(), floats(), timestamps(), WORDS, TOKENS,
    st.builds(quoted, TEXT, st.sampled_from(["'", '"'])),
    st.builds(quoted, st.one_of(integers(), floats(), timestamps(), WORDS), st.sampled_from("'\"")),
    st.from_regex(r"[A-Za-z][A-Za-z0-9 ._/()-]{0,15}[A-Za-z0-9]", fullmatch=True),
)  # fmt: skip
KEYS = st.one_of(st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True), integers(), WORDS)


def flow(items: list[str]) -> str:
    return "[" + ", ".join(item or "~" for item in items) + "]"


def block(pairs: list[tuple[str, Any]], indent: str = "") -> str:
    """A block mapping; a value is a scalar, a flow or block list of scalars, or a mapping."""
    lines = []
    for key, value in pairs:
        if isinstance(value, str):
            lines.append(f"{indent}{key}: {value}".rstrip())
        elif isinstance(value, tuple):  # ("flow" | "block", scalars)
            style, items = value
            if style == "flow" or not items:
                lines.append(f"{indent}{key}: {flow(items)}")
            else:
                lines.append(f"{indent}{key}:")
                lines += [f"{indent}  - {item}".rstrip() for item in items]
        else:
            lines.append(f"{indent}{key}:")
            lines.append(block(value, indent + "  ").rstrip("\n"))
    return "\n".join(lines) + "\n"


LISTS = st.tuples(st.sampled_from(["flow", "block"]), st.lists(SCALAR, max_size=4))
MAPPINGS = st.recursive(
    st.lists(st.tuples(KEYS, st.one_of(SCALAR, LISTS)), min_size=1, max_size=6),
    lambda inner: st.lists(st.tuples(KEYS, SCALAR | LISTS | inner), min_size=1, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(MAPPINGS)
def test_a_generated_block_reads_as_ruamel_reads_it(pairs: list[tuple[str, Any]]) -> None:
    text = block(pairs)
    note(text)
    try:
        theirs = plain(ruamel_load(text))
    except Exception:
        with pytest.raises(yamlread.YAMLError):
            yamlread.load(text)
        return
    assert plain(yamlread.load(text)) == theirs


# ---------------------------------------------------------------- the simple blocks' fast path


def full_load(text: str) -> Any:
    """The full parser alone (libyaml with ruamel's rules), without the fast path."""
    return yaml.load(text, Loader=yamlread._CoreLoader)


def same_as_full(text: str) -> bool:
    """The fast path returned something, and it is what the full parser returns."""
    fast = yamlread.load_simple(text)
    if fast is None:
        return False
    assert plain(fast) == plain(full_load(text)), text
    return True


def test_the_fast_path_reads_the_common_shapes() -> None:
    text = (
        "title: Rate Limits, again\ntags: [api, topic/limits]\ncreated: 2025-01-05T10:00:00Z\n"
        "aliases:\n  - Limits\n  - 'rate: limits'\nn: 0x1F\nempty:\nnone: null\n"
    )
    assert yamlread.load_simple(text) == {
        "title": "Rate Limits, again",
        "tags": ["api", "topic/limits"],
        "created": dt.datetime(2025, 1, 5, 10, tzinfo=UTC),
        "aliases": ["Limits", "rate: limits"],
        "n": 31,
        "empty": None,
        "none": None,
    }
    assert same_as_full(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: b\na: c\n",  # a repeated key: the full parser refuses it
        "true: x\n",  # a key that is no string
        "k: 2026-02-30\n",  # a day that does not exist: the full parser names it
        "k: [a, ]\n",
        "k: a # a comment\n",
        "k: a: b\n",
        "k: |\n  text\n",
        "k:\n  - a\n - b\n",  # items at two indents
        "k: &x a\nl: *x\n",
        "k:\n  nested: map\n",
        "k: a\n  continued\n",
        "k:\tx\n",
        "k: ~\n",
        '"k": x\n',
        'k: \'"\'\nl: "a\\tb"\n',
        "<<: {a: 1}\n",
        "\n",
    ],
)
def test_what_the_fast_path_is_unsure_of_goes_to_the_full_parser(text: str) -> None:
    assert yamlread.load_simple(text) is None


def test_the_fast_path_agrees_with_the_full_parser_over_the_obsidian_help_vault() -> None:
    blocks = [
        found.yaml_text
        for path in sorted(corpus_dir().rglob("*.md"))
        if (found := frontmatter.split(path.read_text(encoding="utf-8"))).yaml_text
    ]
    fast = sum(same_as_full(text) for text in blocks if text.strip())
    assert fast > len(blocks) // 2  # most of that vault's blocks are flat


PIECES = st.sampled_from(
    [*"abXZ09_ .,'/+()-:[]\"#&*!|>?%@`{}~\t=\\é中", "  ", ": ", "- ", "\n", "\n- ", "\n  - ",
     "true", "null", "Null", "2025-01-05T10:00:00Z", "2026-02-30", "2026-1-2 3:04:05 -5",
     "0x1F", "0b2", "1_0", "+.inf", ".nan", "...", "---", "<<", "''", "\"\""]
)  # fmt: skip
FAST_KEYS = st.sampled_from(["title", "tags", "a", "b", "true", "null", "_1", "k-2", "<<", "é"])
FAST_VALUES = st.one_of(
    st.lists(PIECES, max_size=6).map("".join),
    st.lists(st.lists(PIECES, max_size=4).map("".join), max_size=3).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
)
FAST_LINES = st.one_of(
    st.tuples(FAST_KEYS, st.sampled_from([":", ": ", ":  "]), FAST_VALUES).map("".join),
    st.tuples(
        FAST_KEYS,
        st.sampled_from(["", "  "]),
        st.lists(st.lists(PIECES, max_size=5).map("".join), max_size=3),
    ).map(lambda k: "\n".join([f"{k[0]}:", *(f"{k[1]}- {item}" for item in k[2])])),
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(FAST_LINES, min_size=1, max_size=5).map(lambda lines: "\n".join(lines) + "\n"))
def test_the_fast_path_returns_what_the_full_parser_returns_or_nothing(text: str) -> None:
    note(text)
    fast = yamlread.load_simple(text)
    if fast is None:
        return
    try:
        expected = full_load(text)
    except yamlread.YAMLError as exc:
        raise AssertionError(f"the full parser refuses what the fast path read: {exc}") from exc
    assert plain(fast) == plain(expected)
