"""Folder-scoped access in vault_core: under a caller's path rules, the index, the walk and
the write path behave as if the vault held only the notes the rules let it see."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickets import Reach, RuleError
from vault_core import edit, scope
from vault_core.edit import WriteOp
from vault_core.errors import (
    LinksOutsideRulesError,
    NoteNotFoundError,
    OutsideRulesError,
    PathNotFoundError,
)
from vault_core.index.store import Index
from vault_core.library import Library, OpenVault, Settings
from vault_core.ops.move import move_note
from vault_core.search import answers as queries
from vault_core.search import fts as search
from vault_core.vault import Vault

FOLDERS = ["a", "a/b", "a/b/c", "ab", "b", "b/a", "b/A", "café", "café/é", ""]
"""Folders of the drawn vaults, named in rules as here (NFC) and stored decomposed (NFD),
as macOS writes them: a rule names a folder in whatever normal form it is stored, and an
excluded folder (`b/a`) in whatever case (`b/A`)."""
WORDS = ["apple", "berry", "cherry", "date", "elder"]
T0 = 1_700_000_000


def note_text(i: int, words: list[str], tags: list[str], links: list[str], done: bool) -> str:
    lines = ["---", f"title: Note {i}", f"tags: [{', '.join(tags)}]", "---", f"# Note {i}", ""]
    lines.append(" ".join(words))
    lines += [f"See [[{link}]]." for link in links]
    lines.append(f"- [{'x' if done else ' '}] task {i}")
    return "\n".join(lines) + "\n"


@st.composite
def vaults(draw: st.DrawFn) -> tuple[dict[str, str], Reach, dict[str, str]]:
    count = draw(st.integers(min_value=1, max_value=12))
    # Names repeat across folders: a name link may be ambiguous in the vault and not among
    # the visible notes, or lead to an invisible note.
    names = [f"n{draw(st.integers(0, max(1, count // 2)))}" for _ in range(count)]
    rels = list(
        dict.fromkeys(f"{draw(st.sampled_from(FOLDERS))}/{n}.md".lstrip("/") for n in names)
    )
    files = {}
    for i, rel in enumerate(rels):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        tags = draw(st.lists(st.sampled_from(["x", "y", "x/z"]), max_size=2, unique=True))
        links = draw(st.lists(st.sampled_from(rels), max_size=3, unique=True))
        targets = [link[:-3] for link in links] + draw(st.lists(st.sampled_from(names), max_size=2))
        files[rel] = note_text(i, words, tags, targets, draw(st.booleans()))
    files[draw(st.sampled_from(FOLDERS[:-1])) + "/pic.png"] = "png"
    read = draw(st.lists(st.sampled_from(FOLDERS[:-1]), min_size=1, max_size=2, unique=True))
    holes = [f for f in FOLDERS[:-1] if any(f.startswith(r + "/") for r in read)]
    exclude = draw(st.lists(st.sampled_from(holes), max_size=1)) if holes else []
    # Symbolic links to notes and folders, from anywhere: none is a note (each file is
    # indexed where it lies), so none may show what the rules hide.
    links = {
        f"{draw(st.sampled_from(FOLDERS))}/link{i}{draw(st.sampled_from(['.md', '']))}".lstrip(
            "/"
        ): draw(st.sampled_from([*rels, *FOLDERS[:-1]]))
        for i in range(draw(st.integers(0, 3)))
    }
    stored = {nfd(rel): text for rel, text in files.items()}
    return stored, Reach.of(read, [], exclude), {nfd(k): nfd(v) for k, v in links.items()}


def nfd(rel: str) -> str:
    return unicodedata.normalize("NFD", rel)


def build(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Index:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        os.utime(target, (T0, T0 + sum(map(ord, rel))))  # the same mtime in both vaults
    for rel, target_rel in (links or {}).items():
        link = root / rel
        if not link.exists() and not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(root / target_rel, link.parent))
    index = Index.open(root, "v")
    index.reconcile()
    return index


def answers(index: Index, vault: Vault, visible_note: str | None) -> dict[str, Any]:
    """What the read side says about a vault, scores included (BM25 under rules weighs
    terms over the visible notes alone)."""
    found = {}
    for word in [*WORDS[:3], f"{WORDS[0]} {WORDS[3]}"]:
        hits = search.search(index, word, limit=100)
        found[f"search {word}"] = (
            sorted((h.path, round(h.score, 9)) for h in hits.hits),
            hits.total,
        )
    listing = search.search(index, "", limit=100)
    found["recent"] = [h.path for h in listing.hits]
    found["tag x"] = sorted(
        h.path for h in search.search(index, "", search.Filters(tags=["x"])).hits
    )
    found["tags"] = queries.tag_list(index)
    found["tasks"] = queries.tasks(index, include_done=True)
    stats = queries.stats(index)
    stats.pop("last_modified")
    found["stats"] = stats
    found["attachments"] = [a["path"] for a in queries.attachments(index, "", 100)]
    found["walk"] = sorted(entry.rel for entry in vault.walk())
    review = queries.review(index, stale_before_ns=(T0 + 500) * 10**9, limit=100)
    found["review"] = {
        kind: sorted(str(sorted(r.items())) for r in rows) for kind, rows in review.items()
    }
    if visible_note is not None:
        found["backlinks"] = queries.backlinks(index, visible_note)
    return found


@pytest.fixture
def workdir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="scope-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(vaults())
def test_the_read_side_under_rules_is_that_of_a_vault_of_the_visible_notes(
    workdir: Path, drawn: tuple[dict[str, str], Reach, dict[str, str]]
) -> None:
    files, rules, links = drawn
    run = Path(tempfile.mkdtemp(dir=workdir))
    visible = {rel: text for rel, text in files.items() if rules.reads(rel)}
    whole, part = build(run / "whole", files, links), build(run / "part", visible)
    notes = sorted(rel for rel in visible if rel.endswith(".md"))
    probe = notes[0] if notes else None
    try:
        with scope.applied(rules):
            scoped = answers(whole, Vault(run / "whole", "v"), probe)
        assert scoped == answers(part, Vault(run / "part", "v"), probe)
        assert answers(whole, Vault(run / "whole", "v"), None)["walk"] == sorted(files)
    finally:
        whole.close()
        part.close()


ACME = Reach.of(["projects/acme"], ["projects/acme/inbox"], ["projects/acme/hr"])
FILES = {
    "projects/acme/plan.md": (
        "# Plan\n\nSee [[projects/other/secret]] and [[projects/acme/inbox/idea]].\n"
    ),
    "projects/acme/inbox/idea.md": "# Idea\n\nLinks to [[projects/acme/plan]].\n",
    "projects/acme/hr/salaries.md": "# Salaries\n\nLinks to [[projects/acme/plan]].\n",
    "projects/other/secret.md": "# Secret\n\nLinks to [[projects/acme/inbox/idea]].\n",
    "projects/acme/logo.png": "png",
}


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[OpenVault]:
    with team_vault(tmp_path, FILES) as vault:
        yield vault


@contextlib.contextmanager
def team_vault(tmp_path: Path, files: dict[str, str]) -> Iterator[OpenVault]:
    """Vault `team` of a library without a watcher, holding `files`, indexed."""
    library = Library(tmp_path, Settings(watch=False)).open_all()
    vault = library.create("team", "empty")
    for rel, text in files.items():
        (vault.vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault.vault.root / rel).write_text(text)
    vault.index.reconcile()
    try:
        yield vault
    finally:
        library.close()


def test_a_pooled_connection_never_carries_rules_to_the_next_caller(opened: OpenVault) -> None:
    index = opened.index
    with scope.applied(ACME):
        assert search.search(index, "").total == 2
    assert search.search(index, "").total == 4  # the same pooled connection, no rules
    with scope.applied(Reach.of(["projects/other"])):
        assert [h.path for h in search.search(index, "").hits] == ["projects/other/secret.md"]
    assert search.search(index, "").total == 4


def test_rules_without_read_folders_see_the_whole_vault_but_its_exclusions(
    opened: OpenVault,
) -> None:
    with scope.applied(Reach.of(None, [], ["projects/other", "projects/acme/hr"])):
        paths = sorted(h.path for h in search.search(opened.index, "").hits)
        walked = sorted(entry.rel for entry in opened.vault.walk())
    assert paths == ["projects/acme/inbox/idea.md", "projects/acme/plan.md"]
    assert walked == [*paths[:1], "projects/acme/logo.png", paths[1]]


def test_an_invisible_path_reads_as_a_missing_one(opened: OpenVault) -> None:
    vault = opened.vault
    with scope.applied(ACME):
        with pytest.raises(NoteNotFoundError) as hidden:
            vault.read_note("projects/acme/hr/salaries.md")
        with pytest.raises(NoteNotFoundError) as missing:
            vault.read_note("projects/acme/hr/nothing.md")
        assert str(hidden.value).replace("salaries", "nothing") == str(missing.value)
        with pytest.raises(PathNotFoundError) as picture:
            vault.resolve("projects/other/x.png")
        assert "no attachment at projects/other/x.png" in str(picture.value)
        assert not vault.exists("projects/other/secret")
        assert vault.read_note("projects/acme/plan").title == "Plan"


def test_a_link_to_an_invisible_note_reads_as_unresolved(opened: OpenVault) -> None:
    with scope.applied(ACME):
        graph = queries.backlinks(opened.index, "projects/acme/plan.md")
    assert [row["path"] for row in graph["incoming"]] == ["projects/acme/inbox/idea.md"]
    assert {row["target"] for row in graph["broken"]} == {"projects/other/secret"}
    assert [row["path"] for row in graph["outgoing"]] == ["projects/acme/inbox/idea.md"]


def test_writes_outside_the_write_rules_are_refused_alike_whatever_is_there(
    opened: OpenVault,
) -> None:
    vault = opened.vault
    messages = []
    with scope.applied(ACME):
        for rel in ("projects/acme/plan.md", "projects/other/secret.md", "projects/none.md"):
            with pytest.raises(OutsideRulesError) as refused:
                edit.apply(vault, WriteOp(rel, lambda c, e: "x\n"))
            messages.append(str(refused.value).replace(rel, "PATH"))
        written = edit.apply(vault, WriteOp("projects/acme/inbox/new.md", lambda c, e: "# New\n"))
    assert len(set(messages)) == 1
    assert "read projects/acme; write projects/acme/inbox" in messages[0]
    assert written.created
    assert (vault.root / "projects/other/secret.md").read_text().startswith("# Secret")


def test_a_move_whose_links_reach_notes_outside_the_rules_is_refused(opened: OpenVault) -> None:
    wide = Reach.of(["projects/acme"], ["projects/acme"], ["projects/acme/hr"])
    with scope.applied(wide), pytest.raises(LinksOutsideRulesError, match="nothing was changed"):
        move_note(opened.vault, opened.index, "projects/acme/inbox/idea", "projects/acme/idea")
    assert (opened.vault.root / "projects/acme/inbox/idea.md").exists()
    mine = Reach.of(["projects"])
    with scope.applied(mine):
        moved = move_note(opened.vault, opened.index, "projects/acme/plan", "projects/acme/p2")
    assert sorted(moved.written) == ["projects/acme/hr/salaries.md", "projects/acme/inbox/idea.md"]


def test_a_name_link_resolves_among_the_visible_notes_alone(tmp_path: Path) -> None:
    """[[plan]] with a plan in a folder the caller may not see beside the one it may: the
    vault is ambiguous, a vault of the visible notes is not; under the rules the link goes
    to the visible plan, so nothing tells of the other. And [[roadmap]], whose only note
    is invisible, reads as broken, as it would there."""
    files = {
        "pub/plan.md": "# Plan\n",
        "hidden/plan.md": "# Plan\n",
        "hidden/roadmap.md": "# Roadmap\n",
        "pub/a.md": "# A\n\n[[plan]] and [[roadmap]]\n",
    }
    index = build(tmp_path / "v", files)
    rules = Reach.of(["pub"])
    try:
        everything = queries.backlinks(index, "pub/a.md")
        assert [row["path"] for row in everything["outgoing"]] == ["hidden/roadmap.md"]
        assert [row["target"] for row in everything["broken"]] == ["plan"]  # ambiguous
        with scope.applied(rules):
            graph = queries.backlinks(index, "pub/a.md")
            assert [row["path"] for row in graph["outgoing"]] == ["pub/plan.md"]
            assert [row["target"] for row in graph["broken"]] == ["roadmap"]
            assert queries.backlinks(index, "pub/plan.md")["incoming"][0]["path"] == "pub/a.md"
            stats = queries.stats(index)
        part = build(tmp_path / "part", {k: v for k, v in files.items() if k.startswith("pub/")})
        stats.pop("last_modified")
        alone = queries.stats(part)
        alone.pop("last_modified")
        assert stats == alone
        part.close()
        (tmp_path / "v/hidden/plan.md").unlink()  # the vault is no longer ambiguous
        index.reconcile()
        assert [r["path"] for r in queries.backlinks(index, "pub/a.md")["outgoing"]] == [
            "pub/plan.md",
            "hidden/roadmap.md",
        ]
        with scope.applied(rules):
            graph = queries.backlinks(index, "pub/a.md")
            assert [row["path"] for row in graph["outgoing"]] == ["pub/plan.md"]
    finally:
        index.close()


def test_a_name_link_finds_the_visible_note_in_the_other_normal_form(tmp_path: Path) -> None:
    """[[café]] typed composed, a composed café.md hidden and a decomposed one visible: in
    the vault the link's own spelling wins (the hidden note); under the rules it goes to
    the visible note, as in a vault of the visible notes alone."""
    decomposed = unicodedata.normalize("NFD", "café")
    files = {
        f"pub/{decomposed}.md": "# Visible\n",
        "hidden/café.md": "# Hidden\n",
        "pub/a.md": "# A\n\n[[café]]\n",
    }
    index = build(tmp_path / "v", files)
    try:
        everything = queries.backlinks(index, "pub/a.md")
        assert [row["path"] for row in everything["outgoing"]] == ["hidden/café.md"]
        with scope.applied(Reach.of(["pub"])):
            graph = queries.backlinks(index, "pub/a.md")
            assert [row["path"] for row in graph["outgoing"]] == [f"pub/{decomposed}.md"]
            assert "broken" not in graph or not graph["broken"]
    finally:
        index.close()


def test_callers_with_other_rules_in_turn_each_get_their_own_resolution(tmp_path: Path) -> None:
    files = {"pub/plan.md": "# Plan\n", "hidden/plan.md": "# Plan\n", "pub/a.md": "[[plan]]\n"}
    files["hidden/b.md"] = "[[plan]]\n"
    index = build(tmp_path / "v", files)
    public, hidden = Reach.of(["pub"]), Reach.of(["hidden"])
    try:
        for rules, note, target in [(public, "pub/a.md", "pub/plan.md")] * 2 + [
            (hidden, "hidden/b.md", "hidden/plan.md"),
            (public, "pub/a.md", "pub/plan.md"),
            (hidden, "hidden/b.md", "hidden/plan.md"),
        ]:
            with scope.applied(rules):
                outgoing = queries.backlinks(index, note)["outgoing"]
            assert [row["path"] for row in outgoing] == [target]
        assert queries.backlinks(index, "pub/a.md")["outgoing"] == []  # ambiguous in the vault
    finally:
        index.close()


# ------------------------------------------------------------ links, normal forms, case

TEAM = Reach.of(["public"], ["public/drafts"])
LINKED = {
    "public/readme.md": "# Readme\n\nopen\n",
    "public/drafts/draft.md": "# Draft\n",
    "private/plan.md": "# Plan\n\nhidden plan\n\n## Steps\n\none\n",
    "private/salary.md": "# Salary\n\nhidden salary\n",
}


@pytest.fixture
def linked(tmp_path: Path) -> Iterator[OpenVault]:
    """The probe's vault: notes in private/, and links to them planted in public/."""
    with team_vault(tmp_path, LINKED) as opened:
        root = opened.vault.root
        (root / "public/link.md").symlink_to("../private/plan.md")
        (root / "public/linkdir").symlink_to("../private", target_is_directory=True)
        (root / "public/drafts/w").symlink_to("../../private", target_is_directory=True)
        (root / "public/drafts/wlink.md").symlink_to("../../private/plan.md")
        opened.index.reconcile()
        yield opened


def test_a_link_leading_outside_the_read_rules_is_a_missing_note(linked: OpenVault) -> None:
    vault = linked.vault
    with scope.applied(TEAM):
        for rel in ("public/link.md", "public/linkdir/plan.md", "public/drafts/w/salary.md"):
            with pytest.raises(NoteNotFoundError) as hidden:
                vault.read_note(rel)
            with pytest.raises(NoteNotFoundError) as missing:
                vault.read_note("public/none.md")
            assert str(hidden.value).replace(rel, "X") == str(missing.value).replace(
                "public/none.md", "X"
            )
            assert not vault.resolve(rel).abs.exists()  # as at a free path of the folder
            assert not vault.exists(rel)
        assert sorted(entry.rel for entry in vault.walk()) == [
            "public/drafts/draft.md",
            "public/readme.md",
        ]
        assert list(vault.walk("public/linkdir")) == []
        assert search.search(linked.index, "hidden").total == 0
        assert search.search(linked.index, "").total == 2
        assert queries.stats(linked.index)["notes"] == 2
        assert linked.index.skips.listing() == []


def test_no_write_lands_outside_the_write_rules_through_a_link(linked: OpenVault) -> None:
    vault, root = linked.vault, linked.vault.root
    messages = []
    with scope.applied(TEAM):
        for rel in ("public/drafts/w/salary.md", "public/drafts/w/new.md", "private/new.md",
                    "public/drafts/wlink.md"):  # fmt: skip
            with pytest.raises(OutsideRulesError) as refused:
                edit.apply(vault, WriteOp(rel, lambda c, e: "# Overwritten\n"))
            messages.append(str(refused.value).replace(rel, "PATH"))
        with pytest.raises(OutsideRulesError):
            edit.delete(vault, "public/drafts/wlink.md")
        with pytest.raises(OutsideRulesError):
            move_note(vault, linked.index, "public/drafts/draft", "public/drafts/w/moved")
    assert len(set(messages)) == 1
    assert "private" not in messages[0]
    assert not (root / "private/new.md").exists()
    assert (root / "private/salary.md").read_text() == "# Salary\n\nhidden salary\n"
    assert (root / "public/drafts/wlink.md").is_symlink()  # not replaced by a copy
    assert (root / "private/plan.md").read_text().startswith("# Plan")
    assert (root / "public/drafts/draft.md").exists()


def test_a_write_through_a_link_it_may_follow_changes_the_note_where_it_lies(
    linked: OpenVault,
) -> None:
    root = linked.vault.root
    with scope.applied(Reach.of(None)):
        written = edit.apply(
            linked.vault, WriteOp("public/drafts/wlink.md", lambda c, e: c + "more\n")
        )
    assert written.path == "private/plan.md"
    assert (root / "public/drafts/wlink.md").is_symlink()
    assert (root / "private/plan.md").read_text().endswith("one\nmore\n")


def test_a_folder_stored_decomposed_is_the_folder_its_rule_names(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "public/café")
    assert decomposed != "public/café"
    files = {
        f"{decomposed}/menu.md": "# Menu\n\ncroissant\n",
        "public/open.md": "# Open\n\ncroissant\n",
    }
    index = build(tmp_path / "v", files)
    vault = Vault(tmp_path / "v", "v")
    rules = Reach.of(["public"], None, ["public/café"])
    try:
        with scope.applied(rules):
            assert [h.path for h in search.search(index, "croissant").hits] == ["public/open.md"]
            assert [entry.rel for entry in vault.walk()] == ["public/open.md"]
            for spelled in (f"{decomposed}/menu.md", "public/café/menu.md", "public/CAFÉ/menu"):
                with pytest.raises(NoteNotFoundError):
                    vault.read_note(spelled)
                with pytest.raises(OutsideRulesError):
                    edit.apply(vault, WriteOp(spelled, lambda c, e: "x\n"))
        with scope.applied(Reach.of(["public/café"])):  # a read folder, named composed
            assert [h.path for h in search.search(index, "croissant").hits] == [
                f"{decomposed}/menu.md"
            ]
            assert vault.read_note(f"{decomposed}/menu.md").title == "Menu"
    finally:
        index.close()


def test_an_excluded_folder_is_excluded_in_every_case(tmp_path: Path) -> None:
    files = {
        "public/Secret/a.md": "# A\n\nword\n",
        "public/SECRET/b.md": "# B\n\nword\n",
        "public/secretive/c.md": "# C\n\nword\n",
        "public/Straße/d.md": "# D\n\nword\n",
    }
    index = build(tmp_path / "v", files)
    vault = Vault(tmp_path / "v", "v")
    rules = Reach.of(["public"], None, ["public/secret", "public/STRASSE"])
    try:
        with scope.applied(rules):
            assert [h.path for h in search.search(index, "word").hits] == ["public/secretive/c.md"]
            assert [entry.rel for entry in vault.walk()] == ["public/secretive/c.md"]
            with pytest.raises(NoteNotFoundError):
                vault.read_note("public/Secret/a.md")
            with pytest.raises(OutsideRulesError):
                edit.apply(vault, WriteOp("public/sEcReT/new.md", lambda c, e: "x\n"))
        with scope.applied(Reach.of(["public/secret"])):  # read folders match as spelled
            assert search.search(index, "word").total == 0
            with pytest.raises(NoteNotFoundError):
                vault.read_note("public/Secret/a.md")
    finally:
        index.close()


SPELLINGS = (
    st.lists(
        st.sampled_from(["a", "A", "b", "é", "e\u0301", "É", "ß", "ss", "K", "\u212a", "k", "/"]),
        min_size=1,
        max_size=8,
    )
    .map("".join)
    .filter(lambda t: "" not in t.split("/"))
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(SPELLINGS, min_size=1, max_size=2),
    st.lists(SPELLINGS, max_size=2),
    st.lists(SPELLINGS, min_size=1, max_size=6),
)
def test_the_index_judges_every_spelling_as_the_rules_do(
    read: list[str], exclude: list[str], stored: list[str]
) -> None:
    """The SQL the index's views filter by answers what `Rules.reads` answers, for paths
    in any normal form and case (judged by ranges for ASCII, in Python otherwise)."""
    try:
        rules = Reach.of(read, [], [f"{read[0]}/{e}" for e in exclude])
    except RuleError:
        return
    folders = (rules.read, rules.exclude)
    conn = sqlite3.connect(":memory:")
    for name, function in scope.FUNCTIONS.items():
        conn.create_function(name, 1, function, deterministic=True)
    conn.execute("CREATE TABLE t (path TEXT PRIMARY KEY)")
    paths = list(dict.fromkeys([*stored, *(f"{read[0]}/{e}/x" for e in exclude)]))
    conn.executemany("INSERT INTO t VALUES (?)", [(p,) for p in paths])
    seen = {p for (p,) in conn.execute(f"SELECT path FROM t WHERE {scope.clause('path', folders)}")}
    assert seen == {p for p in paths if rules.reads(p)}


def test_a_link_into_an_excluded_folder_resolves_among_the_visible_notes(tmp_path: Path) -> None:
    """[[Plan]] leads to the hidden ex/Plan.md by its file name; among the visible notes
    alone it leads to the one titled Plan, as in a vault of just those notes."""
    files = {
        "ex/Plan.md": "# Hidden\n",
        "pub/other.md": "---\ntitle: Plan\n---\n# Other\n",
        "pub/a.md": "See [[Plan]].\n",
    }
    index = build(tmp_path / "v", files)
    try:
        assert [row["path"] for row in queries.backlinks(index, "pub/a.md")["outgoing"]] == [
            "ex/Plan.md"
        ]
        with scope.applied(Reach.of(None, [], ["ex"])):
            outgoing = queries.backlinks(index, "pub/a.md")["outgoing"]
        assert [row["path"] for row in outgoing] == ["pub/other.md"]
    finally:
        index.close()
