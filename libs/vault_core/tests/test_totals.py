"""The totals the index keeps as it writes agree with counting the rows, after any writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_core.index import store as index_module
from vault_core.index.store import Index
from vault_core.search import answers as queries

NAMES = ["a", "b", "c", "d", "e", "f"]
FOLDERS = ["", "x/", "x/y/"]
TAGS = ["red", "blue", "red/dark", "green"]

note = st.builds(
    lambda tags, links, tasks, words: "".join(
        [
            f"---\ntags: [{', '.join(tags)}]\n---\n" if tags else "",
            "# Title\n",
            "".join(f"see [[{target}]]\n" for target in links),
            "".join(f"- [{'x' if done else ' '}] task\n" for done in tasks),
            "word " * words,
        ]
    ),
    st.lists(st.sampled_from(TAGS), max_size=3, unique=True),
    st.lists(st.sampled_from([*NAMES, "missing", "x/y/b", "pic.png"]), max_size=4),
    st.lists(st.booleans(), max_size=3),
    st.integers(0, 20),
)
paths = st.builds(
    lambda folder, name: f"{folder}{name}.md", st.sampled_from(FOLDERS), st.sampled_from(NAMES)
)
step = st.one_of(
    st.tuples(st.just("write"), paths, note),
    st.tuples(st.just("delete"), paths, st.just("")),
    st.tuples(st.just("attach"), st.sampled_from(["pic.png", "x/pic.png"]), st.just("")),
    st.tuples(st.just("unattach"), st.sampled_from(["pic.png", "x/pic.png"]), st.just("")),
    st.tuples(st.just("rmdir"), st.sampled_from(["x", "x/y"]), st.just("")),
    st.tuples(st.just("reconcile"), st.just(""), st.just("")),
)


def apply(root: Path, index: Index, kind: str, rel: str, text: str) -> None:
    target = root / rel
    if kind in ("write", "attach"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode() if kind == "write" else b"\x89PNG")
    elif kind in ("delete", "unattach"):
        target.unlink(missing_ok=True)
    elif kind == "rmdir":
        for inner in sorted(target.rglob("*"), reverse=True) if target.is_dir() else []:
            inner.rmdir() if inner.is_dir() else inner.unlink()
        if target.is_dir():
            target.rmdir()
    if kind == "reconcile":
        index.reconcile()
    else:
        index.update_path(rel)


def counted(index: Index) -> dict[str, object]:
    kept = queries._counted(index)  # the two ways of counting, side by side
    truth = queries._counted_rows(index)
    assert kept == truth
    return kept


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(step, max_size=25))
def test_the_kept_totals_match_counting_the_rows_after_any_writes(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, str]]
) -> None:
    root = tmp_path_factory.mktemp("vault")
    index = Index.open(root, "vault")
    try:
        for kind, rel, text in steps:
            apply(root, index, kind, rel, text)
            counted(index)
    finally:
        index.close()


def test_a_bulk_fill_counts_its_totals_once_and_keeps_them_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BULK", 10)
    for i in range(30):
        folder = tmp_path / f"f{i % 3}"
        folder.mkdir(exist_ok=True)
        links = f"[[n{(i + 1) % 30}]] [[nowhere]]" if i % 4 else ""
        (folder / f"n{i}.md").write_text(f"#t{i % 5}\n{links}\n- [ ] open\n")
    index = Index.open(tmp_path, "vault")
    try:
        index.reconcile()
        assert not index.filling
        assert counted(index)["notes"] == 30
        (tmp_path / "f0" / "n0.md").unlink()
        index.update_path("f0/n0.md")
        assert counted(index)["notes"] == 29
    finally:
        index.close()


def test_an_index_made_before_the_totals_counts_them_when_opened(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("#t\n[[b]]\n")
    (tmp_path / "b.md").write_text("b\n")
    index = Index.open(tmp_path, "vault")
    index.reconcile()
    with index.writing() as conn:
        conn.execute("DELETE FROM totals")
    index.close()
    reopened = Index.open(tmp_path, "vault")
    try:
        assert counted(reopened)["orphans"] == 0
        assert counted(reopened)["tags"] == 1
    finally:
        reopened.close()
