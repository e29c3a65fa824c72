"""Result shaping: honest truncation under a byte limit."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from vault_node.tools.shape import encode, fit, primary_count, size


def test_a_small_result_is_left_as_it_is() -> None:
    result = {"vault": "v", "entries": [1, 2, 3]}
    assert fit(result, 4096) == (result, False)


def test_a_long_list_is_cut_and_the_result_says_why() -> None:
    result = {"vault": "v", "total": 5000, "entries": [{"path": f"n{i}.md"} for i in range(5000)]}
    cut, truncated = fit(result, 4096)
    assert truncated
    assert size(cut) <= 4096
    assert cut["total"] == 5000
    assert 0 < len(cut["entries"]) < 5000
    assert cut["entries"][0] == {"path": "n0.md"}
    assert cut["truncated"] is True
    assert f"{size(result)} bytes" in cut["notice"]


def test_a_long_string_is_cut_with_a_marker() -> None:
    cut, truncated = fit({"path": "a.md", "content": "word " * 5000}, 4096)
    assert truncated
    assert cut["content"].endswith("…[cut]")
    assert size(cut) <= 4096


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "items", "content"]),
        st.one_of(
            st.text(max_size=3000), st.lists(st.text(max_size=200), max_size=100), st.integers()
        ),
        max_size=4,
    )
)
def test_fit_always_ends_within_the_limit(result: dict[str, Any]) -> None:
    cut, _ = fit(result, 4096)
    assert len(encode(cut).encode()) <= 4096


def test_primary_count_is_the_length_of_the_first_list() -> None:
    assert primary_count({"vault": "v", "hits": [1, 2], "other": [1]}) == 2
    assert primary_count({"vault": "v"}) is None


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)


SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text()
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@given(st.recursive(SCALARS, _nest, max_leaves=30))
def test_encode_writes_what_the_standard_library_writes(value: Any) -> None:
    # The fast encoder must not change a byte of the text content (docs/design.md#result-shape):
    # indented JSON, UTF-8, lone surrogates included (they take the slow path).
    assert encode(value) == json.dumps(value, ensure_ascii=False, indent=2)


@given(st.recursive(SCALARS | FLOATS, _nest, max_leaves=30))
def test_encode_round_trips_numbers_exactly(value: Any) -> None:
    # Floats may be spelled differently (1e-07 or 1e-7); their value may not change.
    assert json.loads(encode(value)) == value


def test_a_lone_surrogate_a_client_sent_is_written_the_slow_way() -> None:
    assert encode({"path": "a\ud800b"}) == '{\n  "path": "a\ud800b"\n}'
