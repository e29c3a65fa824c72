"""Link resolution (docs/design.md#link-resolution): every step, ambiguity, and incremental updates.

Whatever sequence of single-file updates the index sees, its links table must be
exactly what a full resolution over the same files gives.
"""

from __future__ import annotations

import posixpath
import random
import re
import shutil
import sqlite3
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from vault_core import links
from vault_core.index import linkstore, snapshot
from vault_core.index import store as index_module
from vault_core.index.store import Index
from vault_core.search import answers as queries
from vault_core.testing import corpus_dir

Build = Callable[[dict[str, str | bytes]], Index]
LINK_COLUMNS = "src, target, anchor, alias, wiki, resolved"


@pytest.fixture
def build(build_index: Build) -> Build:
    return build_index


def link_rows(index: Index, src: str | None = None) -> list[tuple[object, ...]]:
    where, params = ("WHERE src = ?", (src,)) if src else ("", ())
    with index.reading() as conn:
        return conn.execute(
            f"SELECT {LINK_COLUMNS} FROM links {where} ORDER BY src, rowid", params
        ).fetchall()


def resolved(index: Index, src: str) -> list[tuple[str, str]]:
    """(target, resolved) of each link in `src`, in document order."""
    return [(str(row[1]), str(row[5])) for row in link_rows(index, src)]


def write(index: Index, rel: str, content: str | bytes) -> None:
    target = index.root.joinpath(*rel.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    index.update_path(rel)


def delete(index: Index, rel: str) -> None:
    index.root.joinpath(*rel.split("/")).unlink()
    index.update_path(rel)


def rename(index: Index, old: str, new: str) -> None:
    target = index.root.joinpath(*new.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    index.root.joinpath(*old.split("/")).rename(target)
    index.update_paths([old, new])


def full_resolution(index: Index, scratch: Path) -> list[tuple[object, ...]]:
    """The links table of a brand-new index over a copy of the same files."""
    copy = scratch / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(index.root, copy, ignore=shutil.ignore_patterns(".secondbrain"))
    fresh = Index.open(copy, "copy")
    try:
        fresh.reconcile()
        return link_rows(fresh)
    finally:
        fresh.close()


def changes_by_a_full_pass(index: Index) -> int:
    """How many links `resolve_all` would change in this index (rolled back)."""
    conn = sqlite3.connect(index.db_path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        return linkstore.resolve_all(conn)
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def assert_incremental_is_full(index: Index, scratch: Path) -> None:
    assert sorted(link_rows(index)) == sorted(full_resolution(index, scratch))
    assert changes_by_a_full_pass(index) == 0


# ---------------------------------------------------------------------- the steps


def test_an_anchor_only_link_points_into_its_own_note(build: Build) -> None:
    index = build({"a.md": "# Head\n[[#Head]] and [[#^block1]] and [[#Head|here]]\n^block1\n"})
    assert link_rows(index) == [
        ("a.md", "", "Head", "", 1, "a.md"),
        ("a.md", "", "^block1", "", 1, "a.md"),
        ("a.md", "", "Head", "here", 1, "a.md"),
    ]


def test_dot_slash_and_dot_dot_resolve_against_the_linking_note_s_folder(build: Build) -> None:
    index = build(
        {
            "a/b/src.md": "[[./sib]] [[../up]] [[../../top]] [[./c/down]]\n",
            "a/b/sib.md": "",
            "a/up.md": "",
            "top.md": "",
            "a/b/c/down.md": "",
            "elsewhere/sib.md": "",
            "elsewhere/up.md": "",
        }
    )
    assert resolved(index, "a/b/src.md") == [
        ("./sib", "a/b/sib.md"),
        ("../up", "a/up.md"),
        ("../../top", "top.md"),
        ("./c/down", "a/b/c/down.md"),
    ]


def test_a_dot_dot_link_that_leaves_the_vault_is_broken(build: Build) -> None:
    # `outside` is a unique stem, so only the escape itself can break the link
    index = build({"a/src.md": "[[../../outside]] [x](../../outside.md)\n", "outside.md": ""})
    assert resolved(index, "a/src.md") == [("../../outside", ""), ("../../outside.md", "")]


def test_a_relative_link_to_a_missing_note_does_not_fall_back_to_the_file_name(
    build: Build,
) -> None:
    index = build({"a/src.md": "[[./gone]]\n", "b/gone.md": ""})
    assert resolved(index, "a/src.md") == [("./gone", "")]


def test_a_leading_slash_is_dropped(build: Build) -> None:
    index = build({"a/src.md": "[[/notes/x]] [y](/notes/x.md)\n", "notes/x.md": "", "x.md": ""})
    assert resolved(index, "a/src.md") == [
        ("/notes/x", "notes/x.md"),
        ("/notes/x.md", "notes/x.md"),
    ]


def test_exact_path_then_path_with_md_then_path_ignoring_case(build: Build) -> None:
    index = build(
        {
            "src.md": "[[Folder/Note.md]] [[Folder/Note]] [[folder/NOTE]] [[FOLDER/note.MD]]\n",
            "Folder/Note.md": "",
            "Other/Note.md": "",
        }
    )
    assert resolved(index, "src.md") == [
        ("Folder/Note.md", "Folder/Note.md"),
        ("Folder/Note", "Folder/Note.md"),
        ("folder/NOTE", "Folder/Note.md"),
        ("FOLDER/note.MD", "Folder/Note.md"),
    ]


def test_a_unique_file_name_resolves_in_any_case_with_or_without_md(build: Build) -> None:
    index = build(
        {"src.md": "[[Deep Note]] [[deep note]] [[Deep Note.md]]\n", "x/y/Deep Note.md": ""}
    )
    assert [r for _t, r in resolved(index, "src.md")] == ["x/y/Deep Note.md"] * 3


def test_a_unique_title_resolves(build: Build) -> None:
    index = build(
        {
            "src.md": "[[The Real Title]] [[the real title]] [[Heading Title]]\n",
            "n/2024-01-01.md": "---\ntitle: The Real Title\n---\n",
            "n/h.md": "# Heading Title\n",
        }
    )
    assert resolved(index, "src.md") == [
        ("The Real Title", "n/2024-01-01.md"),
        ("the real title", "n/2024-01-01.md"),
        ("Heading Title", "n/h.md"),
    ]


def test_a_unique_alias_resolves(build: Build) -> None:
    index = build(
        {
            "src.md": "[[Throttling]] [[THROTTLING|x]]\n",
            "wiki/rate-limits.md": "---\naliases: [Throttling, Backpressure]\n---\n",
        }
    )
    assert resolved(index, "src.md") == [
        ("Throttling", "wiki/rate-limits.md"),
        ("THROTTLING", "wiki/rate-limits.md"),
    ]


def test_file_name_outranks_title_and_title_outranks_alias(build: Build) -> None:
    index = build(
        {
            "src.md": "[[Topic]] [[Theme]]\n",
            "a/Topic.md": "",
            "b/other.md": "---\ntitle: Topic\naliases: [Theme]\n---\n",
            "c/third.md": "---\ntitle: Theme\n---\n",
        }
    )
    assert resolved(index, "src.md") == [("Topic", "a/Topic.md"), ("Theme", "c/third.md")]


def test_attachments_resolve_by_exact_path_and_by_unique_file_name(build: Build) -> None:
    index = build(
        {
            "src.md": "![[attachments/diagram.png]] ![[diagram.png]] ![[Diagram.PNG]] "
            "![img](attachments/diagram.png) [[report.pdf]] ![[diagram]]\n",
            "attachments/diagram.png": b"png",
            "files/deep/report.pdf": b"pdf",
        }
    )
    assert resolved(index, "src.md") == [
        ("attachments/diagram.png", "attachments/diagram.png"),
        ("diagram.png", "attachments/diagram.png"),
        ("Diagram.PNG", "attachments/diagram.png"),
        ("report.pdf", "files/deep/report.pdf"),
        ("diagram", ""),  # an attachment is named with its extension
        ("attachments/diagram.png", "attachments/diagram.png"),  # wiki-links come first
    ]


def test_two_attachments_with_one_file_name_leave_the_link_broken(build: Build) -> None:
    index = build(
        {
            "src.md": "![[pic.png]] ![[a/pic.png]]\n",
            "a/pic.png": b"1",
            "b/pic.png": b"2",
        }
    )
    assert resolved(index, "src.md") == [("pic.png", ""), ("a/pic.png", "a/pic.png")]


def test_markdown_links_are_percent_decoded(build: Build) -> None:
    index = build(
        {
            "src.md": "[x](My%20Note.md) [y](<My Note.md>) [z](Caf%C3%A9.md#Part%201)\n",
            "My Note.md": "",
            "Café.md": "",
        }
    )
    assert link_rows(index, "src.md") == [
        ("src.md", "My Note.md", "", "", 0, "My Note.md"),
        ("src.md", "My Note.md", "", "", 0, "My Note.md"),
        ("src.md", "Café.md", "Part 1", "", 0, "Café.md"),
    ]


def test_markdown_links_try_the_linking_note_s_folder_first(build: Build) -> None:
    index = build(
        {
            "a/src.md": "[md](Note.md) [[Note.md]] [sub](sub/x.md)\n",
            "a/Note.md": "",
            "Note.md": "",
            "a/sub/x.md": "",
            "sub/x.md": "",
        }
    )
    assert resolved(index, "a/src.md") == [
        ("Note.md", "Note.md"),  # the wiki-link (listed first) names a vault path
        ("Note.md", "a/Note.md"),
        ("sub/x.md", "a/sub/x.md"),
    ]


def test_a_block_anchor_with_an_alias_keeps_both(build: Build) -> None:
    index = build({"src.md": "[[Note#^block-1|the block]]\n", "dir/Note.md": "text ^block-1\n"})
    assert link_rows(index, "src.md") == [
        ("src.md", "Note", "^block-1", "the block", 1, "dir/Note.md")
    ]


def test_an_escaped_pipe_inside_a_table_separates_the_alias(build: Build) -> None:
    index = build({"src.md": "| a | b |\n| - | - |\n| [[Note\\|alias]] | x |\n", "Note.md": ""})
    assert link_rows(index, "src.md") == [("src.md", "Note", "", "alias", 1, "Note.md")]


def test_links_inside_code_are_not_links(build: Build) -> None:
    index = build({"src.md": "`[[Note]]`\n```\n[[Note]]\n```\n[[Note]]\n", "Note.md": ""})
    assert resolved(index, "src.md") == [("Note", "Note.md")]


@pytest.mark.parametrize(
    ("files", "link"),
    [
        ({"a/Same.md": "", "b/Same.md": ""}, "[[Same]]"),
        ({"a/x.md": "---\ntitle: Same\n---\n", "b/y.md": "# Same\n"}, "[[Same]]"),
        (
            {"a/x.md": "---\naliases: [Same]\n---\n", "b/y.md": "---\naliases: [same]\n---\n"},
            "[[Same]]",
        ),
        (
            {"a/x.md": "---\naliases: [Same]\n---\n", "b/y.md": "---\naliases: [same]\n---\n"},
            "[s](Same)",
        ),
    ],
    ids=["stem", "title", "alias", "markdown-alias"],
)
def test_ambiguity_leaves_a_link_broken(
    build: Build, files: dict[str, str | bytes], link: str
) -> None:
    index = build({"src.md": link + "\n", **files})
    assert [r for _t, r in resolved(index, "src.md")] == [""]


def test_ambiguity_does_not_stop_an_exact_path(build: Build) -> None:
    index = build({"src.md": "[[a/Same]] [[b/Same.md]]\n", "a/Same.md": "", "b/Same.md": ""})
    assert resolved(index, "src.md") == [("a/Same", "a/Same.md"), ("b/Same.md", "b/Same.md")]


def test_a_link_to_nothing_stays_broken(build: Build) -> None:
    index = build({"src.md": "[[Nowhere]] [x](nowhere.md) ![[missing.png]] [[.obsidian/app]]\n"})
    assert [r for _t, r in resolved(index, "src.md")] == ["", "", "", ""]


NFC_CAFE, NFD_CAFE = unicodedata.normalize("NFC", "Café"), unicodedata.normalize("NFD", "Café")


def test_a_name_matches_in_either_normal_form(build: Build, tmp_path: Path) -> None:
    index = build(
        {
            "src.md": (
                f"[[{NFC_CAFE}]] [[menu/{NFC_CAFE}]] [[{NFD_CAFE} Crème]] ![[{NFC_CAFE}.png]]\n"
            ),
            f"menu/{NFD_CAFE}.md": "# Coffee\n",
            "drinks.md": f"---\ntitle: {unicodedata.normalize('NFC', 'Café Crème')}\n---\n",
            f"img/{NFD_CAFE}.png": b"png",
        }
    )
    assert [r for _t, r in resolved(index, "src.md")] == [
        f"menu/{NFD_CAFE}.md",
        f"menu/{NFD_CAFE}.md",
        "drinks.md",
        f"img/{NFD_CAFE}.png",
    ]
    assert_incremental_is_full(index, tmp_path)


def test_the_spelling_a_link_uses_wins_when_both_normal_forms_exist(build: Build) -> None:
    index = build(
        {"src.md": f"[[{NFC_CAFE}]] [[{NFD_CAFE}]]\n", f"{NFC_CAFE}.md": "", f"a/{NFD_CAFE}.md": ""}
    )
    assert [r for _t, r in resolved(index, "src.md")] == [f"{NFC_CAFE}.md", f"a/{NFD_CAFE}.md"]


def test_a_note_made_or_moved_in_the_other_normal_form_takes_its_links_along(
    build: Build, tmp_path: Path
) -> None:
    index = build({"src.md": f"[[{NFC_CAFE}]] [[{NFD_CAFE}]]\n"})
    write(index, f"x/{NFD_CAFE}.md", "")
    assert [r for _t, r in resolved(index, "src.md")] == [f"x/{NFD_CAFE}.md"] * 2
    assert_incremental_is_full(index, tmp_path)
    rename(index, f"x/{NFD_CAFE}.md", f"y/{NFC_CAFE}.md")
    assert [r for _t, r in resolved(index, "src.md")] == [f"y/{NFC_CAFE}.md"] * 2
    delete(index, f"y/{NFC_CAFE}.md")
    assert [r for _t, r in resolved(index, "src.md")] == ["", ""]
    assert_incremental_is_full(index, tmp_path)


# ---------------------------------------------------------------------- pure helpers


def test_normalize_target_cleans_relative_paths_and_refuses_escapes() -> None:
    assert links.normalize_target("a/b/src.md", "../x/./y") == "a/x/y"
    assert links.normalize_target("a/src.md", "../x") == "x"
    assert links.normalize_target("a/src.md", "../../x") is None
    assert links.normalize_target("src.md", "../") is None
    assert links.normalize_target("src.md", "//abs/x") == "abs/x"
    assert links.normalize_target("src.md", " back\\slash ") == "back/slash"


def test_link_key_is_the_lowercase_last_segment_without_md() -> None:
    assert links.link_key("Folder/Sub/My Note.MD") == "my note"
    assert links.link_key("../x/Diagram.png") == "diagram.png"
    assert links.link_key("Topic") == "topic"
    assert links.link_key("") == ""


def test_every_name_of_a_file_shares_a_key_with_the_links_that_reach_it() -> None:
    names = links.note_names("Dir/My Note.md", "A Title", ["Al/ias"])
    assert names == [
        (links.PATH, "dir/my note"),
        (links.STEM, "my note"),
        (links.TITLE, "a title"),
        (links.ALIAS, "al/ias"),
    ]
    assert links.keys_for(names) == {"my note", "a title", "ias"}
    decomposed = links.note_names(unicodedata.normalize("NFD", "Café.md"), "", [])
    assert links.keys_for(decomposed) == {"café", unicodedata.normalize("NFD", "café")}
    assert links.link_key("Al/ias") in links.keys_for(names)
    assert links.attachment_names("Files/Pic.PNG") == [
        (links.PATH, "files/pic.png"),
        (links.FILE, "pic.png"),
    ]


# ---------------------------------------------------------------------- incremental


def test_a_broken_link_resolves_when_its_target_is_created(build: Build, tmp_path: Path) -> None:
    index = build({"src.md": "[[Later]] ![[later.png]] [x](sub/Later.md)\n"})
    assert [r for _t, r in resolved(index, "src.md")] == ["", "", ""]
    write(index, "sub/Later.md", "# Later\n")
    write(index, "img/later.png", b"png")
    assert [r for _t, r in resolved(index, "src.md")] == [
        "sub/Later.md",
        "img/later.png",
        "sub/Later.md",
    ]
    assert_incremental_is_full(index, tmp_path)


def test_a_resolved_link_breaks_when_its_target_is_deleted(build: Build, tmp_path: Path) -> None:
    index = build({"src.md": "[[Target]] [[Target#Head]]\n", "x/Target.md": "# Head\n"})
    assert [r for _t, r in resolved(index, "src.md")] == ["x/Target.md", "x/Target.md"]
    delete(index, "x/Target.md")
    assert [r for _t, r in resolved(index, "src.md")] == ["", ""]
    assert_incremental_is_full(index, tmp_path)


def test_a_second_note_with_the_same_stem_breaks_the_link_and_its_removal_heals_it(
    build: Build, tmp_path: Path
) -> None:
    index = build({"src.md": "[[Twin]]\n", "a/Twin.md": ""})
    write(index, "b/Twin.md", "")
    assert resolved(index, "src.md") == [("Twin", "")]
    assert_incremental_is_full(index, tmp_path)
    delete(index, "a/Twin.md")
    assert resolved(index, "src.md") == [("Twin", "b/Twin.md")]
    assert_incremental_is_full(index, tmp_path)


def test_renaming_a_note_moves_or_breaks_the_links_to_it(build: Build, tmp_path: Path) -> None:
    index = build({"src.md": "[[Moving]] [[a/Moving]] [[b/Moving]]\n", "a/Moving.md": ""})
    assert [r for _t, r in resolved(index, "src.md")] == ["a/Moving.md", "a/Moving.md", ""]
    rename(index, "a/Moving.md", "b/Moving.md")
    assert [r for _t, r in resolved(index, "src.md")] == ["b/Moving.md", "", "b/Moving.md"]
    assert_incremental_is_full(index, tmp_path)
    rename(index, "b/Moving.md", "b/Moved.md")
    assert [r for _t, r in resolved(index, "src.md")] == ["", "", ""]
    assert_incremental_is_full(index, tmp_path)


def test_a_title_or_alias_change_re_resolves_links_by_that_name(
    build: Build, tmp_path: Path
) -> None:
    index = build(
        {
            "src.md": "[[Old Title]] [[New Title]] [[Nick]]\n",
            "n.md": "---\ntitle: Old Title\n---\n",
            "m.md": "---\naliases: [Nick]\n---\n",
        }
    )
    assert [r for _t, r in resolved(index, "src.md")] == ["n.md", "", "m.md"]
    write(index, "n.md", "---\ntitle: New Title\naliases: [nick]\n---\n")
    assert [r for _t, r in resolved(index, "src.md")] == ["", "n.md", ""]
    assert_incremental_is_full(index, tmp_path)


def test_a_note_that_appears_beside_a_markdown_link_takes_it_over(
    build: Build, tmp_path: Path
) -> None:
    index = build({"a/src.md": "[x](Note.md)\n", "Note.md": ""})
    assert resolved(index, "a/src.md") == [("Note.md", "Note.md")]
    write(index, "a/Note.md", "")
    assert resolved(index, "a/src.md") == [("Note.md", "a/Note.md")]
    assert_incremental_is_full(index, tmp_path)


def test_editing_the_linking_note_re_resolves_its_own_links(build: Build, tmp_path: Path) -> None:
    index = build({"src.md": "[[One]]\n", "One.md": "", "Two.md": ""})
    write(index, "src.md", "[[Two]] [[Three]]\n")
    assert resolved(index, "src.md") == [("Two", "Two.md"), ("Three", "")]
    assert_incremental_is_full(index, tmp_path)


_STEMS = ["alpha", "Beta", "gamma"]
_FOLDERS = ["", "x/", "x/y/"]
_TARGETS = [
    "[[alpha]]",
    "[[Beta]]",
    "[[x/alpha]]",
    "[[../alpha]]",
    "[[./gamma]]",
    "[[Shared]]",
    "[[Nick]]",
    "![[pic.png]]",
    "[m](alpha.md)",
    "[m](../Beta.md)",
    "[[#Head]]",
    "[[X/Y/GAMMA]]",
]


def _random_note(rng: random.Random) -> str:
    front = []
    if rng.random() < 0.4:
        front.append(f"title: {rng.choice(['Shared', 'Alpha', 'Nick'])}")
    if rng.random() < 0.4:
        front.append(f"aliases: [{rng.choice(['Nick', 'Shared', 'beta'])}]")
    head = "---\n" + "\n".join(front) + "\n---\n" if front else ""
    return head + "# Head\n" + " ".join(rng.sample(_TARGETS, 3)) + "\n"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_sequence_of_single_updates_equals_a_full_resolution(
    build: Build, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    index = build({"x/alpha.md": "[[Beta]]\n", "Beta.md": "[[alpha]]\n"})
    for step in range(40):
        present = sorted(
            p.relative_to(index.root).as_posix()
            for p in index.root.rglob("*")
            if p.is_file() and ".secondbrain" not in p.parts
        )
        action = rng.random()
        if action < 0.45:
            rel = rng.choice(_FOLDERS) + rng.choice(_STEMS) + ".md"
            write(index, rel, _random_note(rng))
        elif action < 0.65 and present:
            delete(index, rng.choice(present))
        elif action < 0.85 and present:
            old = rng.choice(present)
            new = (
                rng.choice(_FOLDERS)
                + rng.choice(_STEMS)
                + (".md" if old.endswith(".md") else ".png")
            )
            if new not in present:
                rename(index, old, new)
        else:
            write(index, rng.choice(["pic.png", "x/pic.png"]), b"png")
        assert changes_by_a_full_pass(index) == 0, step
        if step % 10 == 9:
            assert sorted(link_rows(index)) == sorted(full_resolution(index, tmp_path)), step
    states = {bool(row[5]) for row in link_rows(index)}
    assert states == {True, False}  # the sequence ended with resolved and broken links


# ---------------------------------------------------------------------- the real corpus

_WIKI = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_md = MarkdownIt("commonmark").enable("table").disable("text_join")


class Oracle:
    """An independent resolver over a file list: markdown-it finds links, plain dicts resolve."""

    def __init__(self, root: Path) -> None:
        self.files = {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
        }
        self.notes = {f: self._read(root / f) for f in self.files if f.lower().endswith(".md")}
        by: dict[str, defaultdict[str, set[str]]] = {
            kind: defaultdict(set) for kind in ("path", "stem", "title", "alias", "file")
        }
        for rel, (meta, tokens) in self.notes.items():
            by["path"][rel[:-3].lower()].add(rel)
            by["stem"][posixpath.basename(rel)[:-3].lower()].add(rel)
            by["title"][self._title(rel, meta, tokens).lower()].add(rel)
            for alias in self._aliases(meta):
                by["alias"][alias.lower()].add(rel)
        for rel in self.files - set(self.notes):
            by["path"][rel.lower()].add(rel)
            by["file"][posixpath.basename(rel).lower()].add(rel)
        self.unique = {
            kind: {k: next(iter(v)) for k, v in d.items() if len(v) == 1} for kind, d in by.items()
        }

    @staticmethod
    def _read(path: Path) -> tuple[dict[str, Any], list[Token]]:
        text = path.read_text("utf-8").removeprefix("\ufeff")
        meta: dict[str, Any] = {}
        if text.startswith("---\n"):
            end = re.search(r"^(---|\.\.\.)$", text[4:], re.MULTILINE)
            if end:
                meta = yaml.safe_load(text[4 : 4 + end.start()]) or {}
                text = text[4 + end.end() :]
        return meta, _md.parse(text)

    @staticmethod
    def _title(rel: str, meta: dict[str, Any], tokens: list[Token]) -> str:
        if isinstance(meta.get("title"), str) and meta["title"].strip():
            return str(meta["title"]).strip()
        for i, token in enumerate(tokens):
            if token.type == "heading_open" and token.tag == "h1" and token.markup == "#":
                return tokens[i + 1].content.strip()
        return posixpath.basename(rel)[:-3]

    @staticmethod
    def _aliases(meta: dict[str, Any]) -> list[str]:
        found = meta.get("aliases") or []
        return [str(a).strip() for a in ([found] if isinstance(found, str) else found)]

    def links(self, rel: str) -> Iterator[tuple[str, str, bool]]:
        """(target, anchor, wiki) of every link outside code, in no particular order."""
        for token in self.notes[rel][1]:
            if token.type != "inline" or not token.children:
                continue
            text = "".join(_visible(child) for child in token.children)
            for match in _WIKI.finditer(text):
                target = match.group(1).replace("\\|", "|").partition("|")[0]
                name, _, anchor = target.partition("#")
                yield name.strip(), anchor.strip(), True
            for child in token.children:
                href = str(child.attrs.get("href", child.attrs.get("src", "")))
                local = href and not href.startswith("#") and not _SCHEME.match(href)
                if child.type in ("link_open", "image") and local:
                    name, _, anchor = unquote(href).partition("#")
                    yield name.strip(), anchor, False

    def resolve(self, src: str, target: str, wiki: bool) -> str:
        if not target:
            return src
        if target.startswith(("./", "../")):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(src), target))
            if target.startswith("../"):
                return ""
        target = target.lstrip("/")
        beside = posixpath.join(posixpath.dirname(src), target)
        for candidate in ([] if wiki else [beside]) + [target, target + ".md"]:
            if candidate in self.files:
                return candidate
        bare = target[:-3] if target.lower().endswith(".md") else target
        for kind, name in (
            ("path", bare),
            ("stem", bare),
            ("title", target),
            ("alias", target),
            ("file", target),
        ):
            found = self.unique[kind].get(name.lower())
            if found:
                return found
        return ""


def _visible(child: Token) -> str:
    if child.type == "text":
        return child.content
    if child.type == "text_special":  # an escaped character is never link syntax
        return "\x00"
    return "\n" if child.type in ("softbreak", "hardbreak") else " "


@pytest.mark.slow
def test_the_corpus_resolves_every_link_as_an_independent_resolver_does(tmp_path: Path) -> None:
    root = tmp_path / "help"
    shutil.copytree(corpus_dir(), root)
    oracle = Oracle(root)
    index = Index.open(root, "help")
    try:
        index.reconcile()
        ours = Counter(
            (src, target, anchor, bool(wiki), resolved)
            for src, target, anchor, _alias, wiki, resolved in link_rows(index)
        )
        broken = queries.stats(index)["broken_links"]
    finally:
        index.close()
    theirs = Counter(
        (src, target, anchor, wiki, oracle.resolve(src, target, wiki))
        for src in oracle.notes
        for target, anchor, wiki in oracle.links(src)
    )
    assert ours == theirs
    # 12 in the English Help vault: 6 illustrative [[Example]] links, one video that is
    # not shipped, and 5 [[Security and privacy]] with a note of that name in both
    # Obsidian Publish/ and Obsidian Sync/ (Obsidian would pick the one beside the link).
    assert broken == sum(n for key, n in theirs.items() if key[4] == "")
    assert sum(theirs.values()) > 1500


def test_a_target_shared_by_many_notes_is_resolved_once_but_relative_ones_per_note(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = build(
        {
            "a/x.md": "# X in a\n",
            "b/x.md": "# X in b\n",
            "Unique.md": "# Unique\n",
            "a/src.md": "[[./x]] [[Unique]] [[#Top]] [[ Unique ]]\n",
            "b/src.md": "[[./x]] [[Unique]] [[#Top]] [x](x.md)\n",
        }
    )
    calls: list[str] = []
    real = links.resolve

    def counted(src: str, target: str, names: links.Names, *, wiki: bool = True) -> str:
        calls.append(target)
        return real(src, target, names, wiki=wiki)

    monkeypatch.setattr(links, "resolve", counted)
    with index.writing() as conn:
        conn.execute("UPDATE links SET resolved = ''")
        linkstore.resolve_all(conn)
    assert resolved(index, "a/src.md") == [
        ("./x", "a/x.md"), ("Unique", "Unique.md"), ("", "a/src.md"), ("Unique", "Unique.md"),
    ]  # fmt: skip
    assert resolved(index, "b/src.md") == [
        ("./x", "b/x.md"), ("Unique", "Unique.md"), ("", "b/src.md"), ("x.md", "b/x.md"),
    ]  # fmt: skip
    assert calls.count("Unique") == 1  # the same from every note
    assert calls.count("./x") == 2  # relative to each note
    assert calls.count("") == 2  # into each note itself
    assert [links.from_anywhere(t) for t in ("  ", ".\\x", "/wiki/Hub", "x.md")] == [
        False, False, True, True,
    ]  # fmt: skip


# ---------------------------------------------------------------------- a cold fill

_FILL: dict[str, str | bytes] = {
    "a/x.md": "# X\n[[y]] [[x]] [[Shared]] [[Nick]] ![[pic.png]] [[../b/z]] [m](z.md)\n",
    "b/x.md": "---\naliases: [Nick]\n---\n# X too\n[[./z]] [[A/X]] [[missing]] [[#Top]]\n",
    "b/z.md": "---\ntitle: Shared\n---\n[[Y.md]] [[pic.png]] [m](../a/x.md)\n",
    "y.md": "# Y\n[[z]] [[Shared]] [[x]]\n",
    "pic.png": b"png",
}


def _filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: Mapping[str, str | bytes]
) -> Index:
    """An index filled from empty by worker processes, as a large vault's cold index is."""
    monkeypatch.setattr(index_module, "BULK", 3)
    monkeypatch.setattr(snapshot, "PARALLEL_MIN", 3)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    for rel, content in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    return Index.open(tmp_path, "v")


def _full_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    made: list[int] = []
    real = linkstore.resolve_all

    def counted(conn: sqlite3.Connection) -> int:
        made.append(real(conn))
        return made[-1]

    monkeypatch.setattr(linkstore, "resolve_all", counted)
    return made


def test_resolving_by_path_agrees_with_resolve_or_leaves_it_to_the_titles(build: Build) -> None:
    index = build(_FILL)
    paths = linkstore.PathNames(_FILL)
    with index.reading() as conn:
        names = linkstore._MemoryNames(conn)
        rows = conn.execute("SELECT src, target, wiki FROM links").fetchall()
    decided = 0
    for src, target, wiki in rows:
        early = links.resolve_by_path(src, target, paths, wiki=bool(wiki))
        if early is not None:
            decided += 1
            assert early == links.resolve(src, target, names, wiki=bool(wiki)), (src, target)
    # Left to the titles and aliases: [[Shared]] and [[x]] (two stems) twice each, [[Nick]],
    # [[missing]].
    assert decided == len(rows) - 6


def test_a_fill_by_workers_resolves_links_as_a_full_pass_does_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _filled(tmp_path, monkeypatch, _FILL)
    passes = _full_passes(monkeypatch)
    try:
        index.reconcile()
        assert passes == []
        assert changes_by_a_full_pass(index) == 0
        # [[x]]: two stems, one title "X".
        assert resolved(index, "y.md") == [("z", "b/z.md"), ("Shared", "b/z.md"), ("x", "a/x.md")]
        assert resolved(index, "a/x.md")[2:4] == [("Shared", "b/z.md"), ("Nick", "b/x.md")]
    finally:
        index.close()


def test_a_fill_that_skips_a_file_resolves_every_link_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _filled(tmp_path, monkeypatch, {**_FILL, "y.md": b"\xff\xfe not UTF-8"})
    passes = _full_passes(monkeypatch)
    try:
        index.reconcile()
        assert len(passes) == 1  # the workers took y.md for a note the index would hold
        assert resolved(index, "b/z.md")[0] == ("Y.md", "")
        assert changes_by_a_full_pass(index) == 0
    finally:
        index.close()


def test_a_fill_with_an_update_meanwhile_resolves_every_link_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BATCH", 2)  # m.md and a/q.md, then a/r.md and z/q.md
    files = {"m.md": "# M\n", "a/q.md": "# Q\n", "a/r.md": "# R\n", "z/q.md": "# Q\n"}
    index = _filled(tmp_path, monkeypatch, files)
    passes = _full_passes(monkeypatch)

    def update(done: int, _total: int) -> None:
        if done == 2:  # [[q]] resolved while a/q.md is the only q the index holds
            (tmp_path / "m.md").write_text("# M\n[[q]]\n")
            index.update_path("m.md")

    try:
        index.reconcile(progress=update)
        assert len(passes) == 1
        assert resolved(index, "m.md") == [("q", "")]  # two stems, two titles Q: ambiguous
        assert changes_by_a_full_pass(index) == 0
    finally:
        index.close()


@pytest.mark.slow
def test_the_corpus_filled_by_workers_resolves_every_link_as_a_full_pass_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _filled(tmp_path, monkeypatch, {})
    shutil.copytree(corpus_dir(), tmp_path, dirs_exist_ok=True)
    passes = _full_passes(monkeypatch)
    try:
        index.reconcile()
        assert passes == []
        assert changes_by_a_full_pass(index) == 0
    finally:
        index.close()
