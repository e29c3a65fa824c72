"""Folder-scoped access in vault_core: under a caller's path rules, the index, the walk and
the write path behave as if the vault held only the notes the rules let it see."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickets import Reach
from vault_core import edit, queries, scope, search
from vault_core.edit import WriteOp
from vault_core.errors import (
    LinksOutsideRulesError,
    NoteNotFoundError,
    OutsideRulesError,
    PathNotFoundError,
)
from vault_core.index import Index
from vault_core.library import Library, OpenVault, Settings
from vault_core.move import move_note
from vault_core.vault import Vault

FOLDERS = ["a", "a/b", "a/b/c", "ab", "b", "b/a", ""]
WORDS = ["apple", "berry", "cherry", "date", "elder"]
T0 = 1_700_000_000


def note_text(i: int, words: list[str], tags: list[str], links: list[str], done: bool) -> str:
    lines = ["---", f"title: Note {i}", f"tags: [{', '.join(tags)}]", "---", f"# Note {i}", ""]
    lines.append(" ".join(words))
    lines += [f"See [[{link}]]." for link in links]
    lines.append(f"- [{'x' if done else ' '}] task {i}")
    return "\n".join(lines) + "\n"


@st.composite
def vaults(draw: st.DrawFn) -> tuple[dict[str, str], Reach]:
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
    return files, Reach.of(read, [], exclude)


def build(root: Path, files: dict[str, str]) -> Index:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        os.utime(target, (T0, T0 + sum(map(ord, rel))))  # the same mtime in both vaults
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
    workdir: Path, drawn: tuple[dict[str, str], Reach]
) -> None:
    files, rules = drawn
    run = Path(tempfile.mkdtemp(dir=workdir))
    visible = {rel: text for rel, text in files.items() if rules.reads(rel)}
    whole, part = build(run / "whole", files), build(run / "part", visible)
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
    library = Library(tmp_path, Settings(watch=False)).open_all()
    vault = library.create("team", "empty")
    for rel, text in FILES.items():
        (vault.vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault.vault.root / rel).write_text(text)
    vault.index.reconcile()
    yield vault
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
