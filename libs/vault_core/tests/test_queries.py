"""Answers from the index (docs/design.md#related-notes): exact values on tiny vaults."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from tickets import Reach
from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import answers as queries
from vault_core.search.answers import Related
from vault_core.search.fts import modified

Build = Callable[..., Index]
SECOND = 1_000_000_000
T0 = 1_700_000_000 * SECOND  # 2023-11-14T22:13:20Z


@pytest.fixture
def build(build_index: Build) -> Build:
    """Every file pinned at T0 unless `mtimes` says otherwise."""
    return functools.partial(build_index, pin_all=True)


def size(files: dict[str, str | bytes], *rels: str) -> int:
    return sum(len(v.encode() if isinstance(v, str) else v) for k, v in files.items() if k in rels)


# ---------------------------------------------------------------------- vault_stats

STATS_FILES: dict[str, str | bytes] = {
    "a.md": "---\ntags: [x, y]\n---\n# A\nsee [[b]] and [[missing]]\n- [ ] open one\n- [x] done\n",
    "b.md": "#x body text\n",
    "c.md": "lonely words here\n",
    "d.md": "# D\n[[#D]] only itself\n- [ ] open two\n",
    "att/p.png": b"\x89PNG....",
}


def test_stats_counts_everything_the_spec_lists(build: Build) -> None:
    index = build(STATS_FILES, mtimes={"c.md": 50, "att/p.png": 40})
    assert queries.stats(index) == {
        "notes": 4,
        "attachments": 1,
        # body words without frontmatter, split on whitespace: 14 + 3 + 3 + 10
        "words": 30,
        "bytes": size(STATS_FILES, *STATS_FILES),
        "tags": 2,
        "links": 3,
        "broken_links": 1,
        "orphans": 2,  # c has no links; d only links into itself
        "open_tasks": 2,
        "last_modified": "2023-11-14T22:14:10Z",
        "top_tags": ["x (2)", "y (1)"],
        "skipped": 0,
    }


def test_stats_of_an_empty_vault_are_zero(build: Build) -> None:
    assert queries.stats(build({})) == {
        "notes": 0, "attachments": 0, "words": 0, "bytes": 0, "tags": 0, "links": 0,
        "broken_links": 0, "orphans": 0, "open_tasks": 0, "last_modified": "", "top_tags": [],
        "skipped": 0,
    }  # fmt: skip


def test_top_tags_are_the_ten_most_used_ties_alphabetical(build: Build) -> None:
    # tag tN is on N notes, for N = 1..12; "zz" and "aa" tie with t3 at the tenth place
    files: dict[str, str | bytes] = {
        f"n{i}.md": " ".join(f"#t{n}" for n in range(i, 13)) + "\n" for i in range(1, 13)
    }
    for rel in ("n1.md", "n2.md", "n3.md"):
        files[rel] = str(files[rel]) + "#zz #aa\n"
    stats = queries.stats(build(files))
    assert stats["tags"] == 14
    assert stats["top_tags"] == [
        "t12 (12)", "t11 (11)", "t10 (10)", "t9 (9)", "t8 (8)", "t7 (7)", "t6 (6)", "t5 (5)",
        "t4 (4)", "aa (3)",
    ]  # fmt: skip


def test_stats_follow_every_change_and_cost_no_query_while_there_is_none(build: Build) -> None:
    index = build(STATS_FILES)
    before = queries.stats(index)
    opened = []
    real = index.querying

    def counted():  # type: ignore[no-untyped-def]
        opened.append(1)
        return real()

    index.querying = counted  # type: ignore[method-assign]
    assert queries.stats(index) == before
    assert opened == []
    (index.root / "c.md").write_text("now [[a]] links out\n- [ ] open three\n")
    index.update_path("c.md")
    after = queries.stats(index)
    assert len(opened) == 1
    assert (after["orphans"], after["open_tasks"], after["links"]) == (1, 3, 4)


def test_stats_count_orphans_as_the_review_does(build: Build) -> None:
    files: dict[str, str | bytes] = {
        "hub.md": "[[a]] [[b]] [[gone]]\n", "a.md": "[[a]] self only\n", "b.md": "plain\n",
        "c.md": "[[#Heading]]\n", "d.md": "[[c]]\n", "e.md": "[[missing]]\n",
        "f/p.png": b"png", "g.md": "![[p.png]]\n",
    }  # fmt: skip
    index = build(files)
    found = queries.review(index, stale_before_ns=0, limit=50, only="orphan")["orphan"]
    assert queries.stats(index)["orphans"] == len(found)
    assert [item["path"] for item in found] == ["e.md"]  # a broken link joins nothing


# ---------------------------------------------------------------------- tag_list


def test_tag_list_orders_by_note_count_then_alphabetically(build: Build) -> None:
    index = build({
        "a.md": "#beta #alpha #project/x\n", "b.md": "#beta #alpha\n", "c.md": "#gamma #beta\n",
        "d.md": "---\ntags: [Beta]\n---\n#beta twice in one note counts once\n",
    })  # fmt: skip
    assert queries.tag_list(index) == [
        {"tag": "beta", "notes": 4},
        {"tag": "alpha", "notes": 2},
        {"tag": "gamma", "notes": 1},
        {"tag": "project/x", "notes": 1},
    ]
    assert queries.tag_list(index, limit=2) == [
        {"tag": "beta", "notes": 4},
        {"tag": "alpha", "notes": 2},
    ]


def test_tag_list_prefix_matches_the_start_of_a_tag(build: Build) -> None:
    index = build({
        "a.md": "#project #project/alpha #prose #improve #pro_x #proxy\n", "b.md": "#project\n",
    })  # fmt: skip
    assert queries.tag_list(index, prefix="#Pro") == [
        {"tag": "project", "notes": 2},
        {"tag": "pro_x", "notes": 1},
        {"tag": "project/alpha", "notes": 1},
        {"tag": "prose", "notes": 1},
        {"tag": "proxy", "notes": 1},
    ]
    assert queries.tag_list(index, prefix="pro_") == [{"tag": "pro_x", "notes": 1}]


# ---------------------------------------------------------------------- note_backlinks

LINKED: dict[str, str | bytes] = {
    "hub.md": "# Hub\n[[spoke]] [[spoke#Part|p]] ![[pic.png]] [[nowhere#x]] [[#Hub]]\n",
    "spoke.md": "---\ntitle: The Spoke\n---\n[[hub]] [back](hub.md#Hub)\n",
    "other.md": "# Other\n[[Hub#Hub]]\n",
    "pic.png": b"png",
}


def test_backlinks_lists_incoming_links_without_self_links(build: Build) -> None:
    found = queries.backlinks(build(LINKED), "hub.md")
    assert found["incoming"] == [
        {"path": "other.md", "title": "Other", "target": "Hub", "anchor": "Hub"},
        {"path": "spoke.md", "title": "The Spoke", "target": "hub", "anchor": ""},
        {"path": "spoke.md", "title": "The Spoke", "target": "hub.md", "anchor": "Hub"},
    ]


def test_backlinks_lists_resolved_outgoing_links_and_the_broken_ones(build: Build) -> None:
    found = queries.backlinks(build(LINKED), "hub.md")
    assert found["outgoing"] == [
        {"path": "spoke.md", "title": "The Spoke", "target": "spoke", "anchor": ""},
        {"path": "spoke.md", "title": "The Spoke", "target": "spoke", "anchor": "Part"},
        {"path": "pic.png", "title": "pic.png", "target": "pic.png", "anchor": ""},
        {"path": "hub.md", "title": "Hub", "target": "", "anchor": "Hub"},
    ]
    assert found["broken"] == [{"target": "nowhere", "anchor": "x"}]


def test_backlinks_of_a_path_without_a_note_are_empty(build: Build) -> None:
    found = queries.backlinks(build(LINKED), "gone.md")
    assert found == {"incoming": [], "outgoing": [], "broken": []}


# ---------------------------------------------------------------------- note_related

RELATED: dict[str, str | bytes] = {
    "me.md": "---\ntags: [rare, common]\n---\n[[out1]] [[both]] [[both]] [[shared]] ![[pic.png]]\n",
    "out1.md": "#common\n",
    "both.md": "#common #rare [[me]]\n",
    "in1.md": "#common [[me]]\n",
    "cocite.md": "#common [[shared]]\n",
    "shared.md": "target of two\n",
    "unrelated.md": "[[cocite]]\n",
    "pic.png": b"png",
}


def test_related_adds_rare_tags_links_out_links_in_and_co_citation(build: Build) -> None:
    # common is on 5 notes (6/5 = 1.2 each), rare on 2 (6/2 = 3.0)
    found = queries.related(build(RELATED), "me.md")
    assert [(r.path, r.score) for r in found] == [
        ("both.md", 3.0 + 1.2 + 2 * 3.0 + 3.0),  # rare + common, two links out, one in
        ("in1.md", 1.2 + 3.0),  # common, one link in; ties with out1 and sorts by path
        ("out1.md", 1.2 + 3.0),  # common, one link out
        ("shared.md", 3.0),  # one link out
        ("cocite.md", 1.2 + 1.5),  # common, and it links to shared as me does
    ]


def test_related_rows_carry_title_tags_modified_and_bytes_and_respect_the_limit(
    build: Build,
) -> None:
    found = queries.related(build(RELATED, mtimes={"both.md": 7}), "me.md", limit=2)
    assert found == [
        Related("both.md", "both", 13.2, ["common", "rare"], "2023-11-14T22:13:27Z",
                size(RELATED, "both.md")),
        Related("in1.md", "in1", 4.2, ["common"], "2023-11-14T22:13:20Z", size(RELATED, "in1.md")),
    ]  # fmt: skip


def test_a_note_with_nothing_in_common_has_no_related_notes(build: Build) -> None:
    assert queries.related(build({"a.md": "alone\n", "b.md": "#t\n"}), "a.md") == []


# ---------------------------------------------------------------------- task_list

TASKS: dict[str, str | bytes] = {
    "p/a.md": "---\ntitle: Plan\ntags: [x]\n---\n# Plan\n\n- [ ] first\n  - [x] nested done\n"
    "```\n- [ ] in code\n```\n* [X] Call Carol 100%\n+ [ ] third\n",
    "p/sub/b.md": "intro\n- [ ] Call Bob\n",
    "px.md": "- [ ] beside the folder\n",
    "q.md": "- [x] done\n- [ ] CALL alice\n",
}


def file_task_lines(rel: str) -> list[int]:
    """Line numbers as an editor shows them, found without the index's parser."""
    lines = str(TASKS[rel]).split("\n")
    fenced, found = False, []
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.lstrip()[:3] in ("- [", "* [", "+ ["):
            found.append(number)
    return found


def test_tasks_are_sorted_by_path_and_line_with_editor_line_numbers(build: Build) -> None:
    found = queries.tasks(build(TASKS), include_done=True)
    assert found == [
        {"path": "p/a.md", "line": 7, "text": "first", "done": False, "note_title": "Plan"},
        {"path": "p/a.md", "line": 8, "text": "nested done", "done": True, "note_title": "Plan"},
        {"path": "p/a.md", "line": 12, "text": "Call Carol 100%", "done": True,
         "note_title": "Plan"},
        {"path": "p/a.md", "line": 13, "text": "third", "done": False, "note_title": "Plan"},
        {"path": "p/sub/b.md", "line": 2, "text": "Call Bob", "done": False, "note_title": "b"},
        {"path": "px.md", "line": 1, "text": "beside the folder", "done": False,
         "note_title": "px"},
        {"path": "q.md", "line": 1, "text": "done", "done": True, "note_title": "q"},
        {"path": "q.md", "line": 2, "text": "CALL alice", "done": False, "note_title": "q"},
    ]  # fmt: skip
    for rel in TASKS:
        assert [t["line"] for t in found if t["path"] == rel] == file_task_lines(rel), rel


def test_tasks_leave_out_done_ones_unless_asked(build: Build) -> None:
    found = queries.tasks(build(TASKS))
    assert [(t["path"], t["text"]) for t in found] == [
        ("p/a.md", "first"), ("p/a.md", "third"), ("p/sub/b.md", "Call Bob"),
        ("px.md", "beside the folder"), ("q.md", "CALL alice"),
    ]  # fmt: skip


def test_tasks_filter_by_folder_prefix_and_case_insensitive_text(build: Build) -> None:
    index = build(TASKS)
    assert [t["text"] for t in queries.tasks(index, prefix="p/")] == ["first", "third", "Call Bob"]
    called = queries.tasks(index, contains="call", include_done=True)
    assert [t["text"] for t in called] == ["Call Carol 100%", "Call Bob", "CALL alice"]
    assert [t["text"] for t in queries.tasks(index, contains="%", include_done=True)] == [
        "Call Carol 100%"
    ]
    assert [t["text"] for t in queries.tasks(index, contains="_", include_done=True)] == []
    assert [t["text"] for t in queries.tasks(index, limit=2)] == ["first", "third"]


def test_task_text_matches_case_insensitively_beyond_ascii(build: Build) -> None:
    index = build({"de.md": "- [ ] Äpfel kaufen\n- [ ] ÜBER Straße\n- [ ] pears\n"})
    assert [t["text"] for t in queries.tasks(index, contains="äPFEL")] == ["Äpfel kaufen"]
    assert [t["text"] for t in queries.tasks(index, contains="über strasse")] == ["ÜBER Straße"]


# ---------------------------------------------------------------------- vault_review

BIG = "# Big\n" + "filler text " * 30 + "\n[[small]] [[gone]]\n- [ ] tidy up\n"
REVIEW: dict[str, str | bytes] = {
    "big.md": BIG,  # over 300 bytes
    "small.md": "# Small\n[[big]]\n",
    "tiny.md": "t\n",
    "tie-b.md": "tie\n",
    "tie-a.md": "tie\n",
    "lone.md": "# Lone\n" + "x " * 200 + "\n- [ ] lonely task\n- [x] finished\n",
    "pic.png": b"p" * 10,
}


def test_review_finds_each_category_with_its_detail(build: Build) -> None:
    index = build(
        REVIEW,
        mtimes={"big.md": 400, "small.md": 300, "tiny.md": 100, "tie-a.md": 200,
                "tie-b.md": 200, "lone.md": 500},
    )  # fmt: skip
    found = queries.review(index, stale_before_ns=T0 + 250 * SECOND)
    assert found == {
        "stub": [
            {"path": "tiny.md", "title": "tiny", "reason": "smaller than 300 bytes",
             "detail": "2"},
            {"path": "tie-a.md", "title": "tie-a", "reason": "smaller than 300 bytes",
             "detail": "4"},
            {"path": "tie-b.md", "title": "tie-b", "reason": "smaller than 300 bytes",
             "detail": "4"},
            {"path": "small.md", "title": "Small", "reason": "smaller than 300 bytes",
             "detail": "16"},
        ],
        "orphan": [
            {"path": p, "title": t, "reason": "no links in or out", "detail": ""}
            for p, t in [("lone.md", "Lone"), ("tie-a.md", "tie-a"), ("tie-b.md", "tie-b"),
                         ("tiny.md", "tiny")]
        ],
        "broken_link": [
            {"path": "big.md", "title": "Big", "reason": "link target not found",
             "detail": "gone"},
        ],
        "stale": [
            {"path": "tiny.md", "title": "tiny", "reason": "not modified since",
             "detail": "2023-11-14T22:15:00Z"},
            {"path": "tie-a.md", "title": "tie-a", "reason": "not modified since",
             "detail": "2023-11-14T22:16:40Z"},
            {"path": "tie-b.md", "title": "tie-b", "reason": "not modified since",
             "detail": "2023-11-14T22:16:40Z"},
        ],
        "open_task": [
            {"path": "big.md", "title": "Big", "reason": "open task", "detail": "tidy up"},
            {"path": "lone.md", "title": "Lone", "reason": "open task", "detail": "lonely task"},
        ],
        "skipped": [],
    }  # fmt: skip


def test_review_only_returns_one_category_and_limit_caps_each(build: Build) -> None:
    index = build(REVIEW)
    assert queries.review(index, stale_before_ns=T0 + SECOND, only="stale", limit=2) == {
        "stale": [
            {"path": p, "title": t, "reason": "not modified since",
             "detail": "2023-11-14T22:13:20Z"}
            for p, t in (("big.md", "Big"), ("lone.md", "Lone"))
        ]
    }  # fmt: skip
    capped = queries.review(index, stale_before_ns=0, limit=1)
    assert {k: [i["path"] for i in v] for k, v in capped.items()} == {
        "stub": ["tiny.md"], "orphan": ["lone.md"], "broken_link": ["big.md"], "stale": [],
        "open_task": ["big.md"], "skipped": [],
    }  # fmt: skip


# ---------------------------------------------------------------------- attachment_list


def test_attachments_under_a_prefix_with_their_reference_counts(build: Build) -> None:
    files: dict[str, str | bytes] = {
        "attachments/a.png": b"aaaa",
        "attachments/sub/b.pdf": b"bb",
        "attachments/unused.txt": b"u",
        "elsewhere/c.png": b"c",
        "attachments-old/d.png": b"d",
        "n1.md": "![[a.png]] ![[attachments/a.png]] [x](attachments/sub/b.pdf)\n",
        "n2.md": "![[a.png]] ![[c.png]]\n",
        "n3.md": "![[missing.png]]\n",
    }
    index = build(files, mtimes={"attachments/a.png": 5})
    assert queries.attachments(index) == [
        {"path": "attachments/a.png", "bytes": 4, "modified": "2023-11-14T22:13:25Z",
         "references": 2},
        {"path": "attachments/sub/b.pdf", "bytes": 2, "modified": modified(T0),
         "references": 1},
        {"path": "attachments/unused.txt", "bytes": 1, "modified": modified(T0),
         "references": 0},
    ]  # fmt: skip
    everything = queries.attachments(index, prefix="", limit=2)
    assert [(a["path"], a["references"]) for a in everything] == [
        ("attachments-old/d.png", 0),
        ("attachments/a.png", 2),
    ]
    assert [a["path"] for a in queries.attachments(index, prefix="/elsewhere/")] == [
        "elsewhere/c.png"
    ]


# ---------------------------------------------------------------------- listings

LISTED: dict[str, str | bytes] = {
    "a.md": "# Alpha\n",
    "b/c.md": "no heading\n",
    "b/d.png": b"\x89PNG....",
    "bz.md": "# Bz\n",
    "secret/s.md": "# S\n",
}


def test_entries_after_page_through_notes_and_attachments_by_path(build: Build) -> None:
    index = build(LISTED)
    first = queries.entries_after(index, "", 2)
    assert first == [
        queries.Entry("a.md", "Alpha", len(b"# Alpha\n"), is_note=True),
        queries.Entry("b/c.md", "c", len(b"no heading\n"), is_note=True),
    ]
    rest = queries.entries_after(index, first[-1].path, 10)
    assert [(e.path, e.is_note) for e in rest] == [
        ("b/d.png", False),
        ("bz.md", True),
        ("secret/s.md", True),
    ]
    assert queries.entries_after(index, rest[-1].path, 10) == []


def test_paths_starting_a_prefix_stop_at_the_limit_and_after_the_prefix(build: Build) -> None:
    index = build(LISTED)
    assert queries.paths_starting(index, "b", 10) == ["b/c.md", "b/d.png", "bz.md"]
    assert queries.paths_starting(index, "b/", 1) == ["b/c.md"]
    assert queries.paths_starting(index, "", 10) == sorted(LISTED)
    assert queries.paths_starting(index, "%_", 10) == []


def test_listings_under_path_rules_hold_only_the_visible_files(build: Build) -> None:
    index = build(LISTED)
    with scope.applied(Reach.of(["b", "secret"], None, ["secret/s.md"])):
        assert [e.path for e in queries.entries_after(index, "", 10)] == ["b/c.md", "b/d.png"]
        assert queries.paths_starting(index, "b", 10) == ["b/c.md", "b/d.png"]
        assert queries.paths_starting(index, "sec", 10) == []
