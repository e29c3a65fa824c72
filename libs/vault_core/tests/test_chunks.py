"""Notes cut into the pieces their vectors are made of: per heading section, bounded."""

from __future__ import annotations

from vault_core.search import chunks


def test_each_heading_section_is_a_piece_that_names_the_note_and_the_heading() -> None:
    body = "Intro text.\n\n## Setup\n\nInstall it.\n\n## Use\n\nRun it.\n"
    found = chunks.chunks("Guide", body)
    assert [c.heading for c in found] == ["", "Setup", "Use"]
    assert found[1].text.startswith("Guide — Setup\n")
    assert "Install it." in found[1].text
    assert "Run it." not in found[1].text


def test_a_long_section_is_cut_with_overlap_and_no_piece_is_over_the_size() -> None:
    body = "## Long\n\n" + " ".join(f"word{n}" for n in range(2000)) + "\n"
    found = chunks.chunks("T", body)
    assert len(found) > 3
    assert all(len(c.text) <= chunks.SIZE + len("T — Long\n") for c in found)
    first, second = found[0].text.split()[-3:], found[1].text
    assert first[-1] in second  # the overlap carries the end of one piece into the next


def test_a_huge_note_costs_at_most_max_chunks() -> None:
    body = "".join(f"## H{n}\n\ntext {n}\n\n" for n in range(500))
    assert len(chunks.chunks("T", body)) == chunks.MAX_CHUNKS


def test_an_empty_note_has_no_piece_and_headings_in_code_do_not_cut() -> None:
    assert chunks.chunks("T", "") == []
    body = "text\n\n```\n## not a heading\n```\n"
    assert [c.heading for c in chunks.chunks("T", body)] == [""]
