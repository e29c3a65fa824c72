"""Path resolution (docs/design.md#path-resolution): the eight steps, the dot-segment invariant,
symlinks, walk."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_core import paths
from vault_core.errors import InvalidPathError, InvalidVaultNameError
from vault_core.skips import Skipped
from vault_core.testing import plant_hostile_files, unprivileged

HOSTILE = [
    ("", "empty"),
    ("   ", "empty"),
    ("a\x00b.md", "NUL"),
    ("/etc/passwd", "absolute"),
    ("\\etc\\passwd", "absolute"),
    ("C:\\Windows\\x.md", "absolute"),
    ("..", "leaves"),
    ("../x.md", "leaves"),
    ("a/../../x.md", "leaves"),
    ("a/../..", "leaves"),
    ("..\\x.md", "leaves"),
    ("a//b.md", "empty segment"),
    (".secondbrain/index.db", "start with '.'"),
    (".git/config", "start with '.'"),
    (".obsidian/app.json", "start with '.'"),
    ("wiki/.hidden.md", "start with '.'"),
    ("a/../.git/HEAD", "start with '.'"),
    ("wiki/x\x07.md", "control character"),
    ("wiki/x\x7f.md", "control character"),
    ("wiki/x\x85.md", "control character"),
    ("wiki/\u202egpj.md", "text-direction control U+202E"),
    ("wiki/a\u2066b.md", "text-direction control U+2066"),
    ("\u202aleft/x.md", "text-direction control U+202A"),
    ("wiki/\udc80.md", "not valid Unicode"),
    ("\ud83d.md", "not valid Unicode"),
    ("x" * 2000, "longer than"),
    ("wiki/" + "x" * 256 + ".md", "name is longer than 255 bytes"),
    ("é" * 128 + "/a.md", "name is longer than 255 bytes"),  # 256 bytes in 128 characters
]


@pytest.mark.parametrize(("raw", "reason"), HOSTILE)
def test_a_hostile_path_is_refused_with_its_reason(tmp_path: Path, raw: str, reason: str) -> None:
    with pytest.raises(InvalidPathError) as caught:
        paths.resolve(tmp_path, raw)
    assert reason in caught.value.message
    assert str(tmp_path) not in caught.value.message


@pytest.mark.parametrize(
    ("raw", "rel"),
    [
        ("wiki/x.md", "wiki/x.md"),
        ("  wiki/x.md  ", "wiki/x.md"),
        ("./wiki/x.md", "wiki/x.md"),
        ("wiki\\x.md", "wiki/x.md"),
        ("wiki/sub/../x.md", "wiki/x.md"),
        ("wiki/./x.md", "wiki/x.md"),
        ("wiki/", "wiki"),
        ("Notes with spaces/Ünïcödé 日本語.md", "Notes with spaces/Ünïcödé 日本語.md"),
        ("he/\u05e9\u05dc\u05d5\u05dd\u200f.md", "he/\u05e9\u05dc\u05d5\u05dd\u200f.md"),
        ("emoji/\U0001f469\u200d\U0001f4bb.md", "emoji/\U0001f469\u200d\U0001f4bb.md"),
    ],
)
def test_a_good_path_resolves_vault_relative_with_slashes(
    tmp_path: Path, raw: str, rel: str
) -> None:
    resolved = paths.resolve(tmp_path, raw)
    assert resolved.rel == rel
    assert resolved.abs == tmp_path.joinpath(*rel.split("/"))


@pytest.mark.parametrize(
    ("raw", "rel"),
    [("wiki/x", "wiki/x.md"), ("wiki/x.md", "wiki/x.md"), ("wiki/X.MD", "wiki/X.MD")],
)
def test_resolve_note_completes_a_missing_md_extension(tmp_path: Path, raw: str, rel: str) -> None:
    assert paths.resolve_note(tmp_path, raw).rel == rel


def test_a_note_name_too_long_once_md_is_added_is_refused(tmp_path: Path) -> None:
    assert paths.resolve_note(tmp_path, "x" * 252).rel == "x" * 252 + ".md"
    with pytest.raises(InvalidPathError, match="longer than 255 bytes"):
        paths.resolve_note(tmp_path, "x" * 253)


def test_a_symlinked_directory_pointing_outside_is_refused(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (vault / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidPathError, match="symbolic link"):
        paths.resolve(vault, "link/secret.md")
    with pytest.raises(InvalidPathError, match="symbolic link"):
        paths.resolve_note(vault, "link/new-note")


def test_a_symlinked_file_pointing_outside_is_refused(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (vault / "x.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(InvalidPathError, match="symbolic link"):
        paths.resolve(vault, "x.md")


def test_a_symlink_inside_the_vault_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert paths.resolve(tmp_path, "alias/x.md").rel == "alias/x.md"


# (link, where it points, a path asked for through it)
INTO_DOT_FOLDERS = [
    ("link", ".git", "link/config"),
    ("link", ".git", "link/new.md"),
    ("link", ".git", "link"),
    ("cfg.md", ".git/config", "cfg.md"),
    ("state", ".secondbrain", "state/instructions.md"),
    ("instructions.md", ".secondbrain/instructions.md", "instructions.md"),
    ("app", ".obsidian", "app/app.json"),
    ("wiki/deep", "../.git", "wiki/deep/HEAD"),
    ("wiki/hooks", "../.git/hooks", "wiki/hooks/pre-commit"),
]


@pytest.mark.parametrize(("link", "target", "raw"), INTO_DOT_FOLDERS)
def test_a_symlink_into_a_dot_folder_is_refused(
    tmp_path: Path, link: str, target: str, raw: str
) -> None:
    for folder in (".git/hooks", ".secondbrain", ".obsidian", "wiki"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    for name in (".git/config", ".secondbrain/instructions.md", ".obsidian/app.json"):
        (tmp_path / name).write_text("x")
    (tmp_path / link).symlink_to(target)
    through_link = "/" in raw or raw.endswith(".md")  # resolve_note("link") asks for link.md
    for resolve in (paths.resolve, paths.resolve_note) if through_link else (paths.resolve,):
        with pytest.raises(InvalidPathError, match="hidden folder") as caught:
            resolve(tmp_path, raw)
        assert str(tmp_path) not in caught.value.message


def test_a_vault_inside_a_dot_folder_of_the_host_still_resolves(tmp_path: Path) -> None:
    root = tmp_path / ".vaults" / "team"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("x")
    (root / "alias.md").symlink_to("wiki/a.md")
    assert paths.resolve(root, "alias.md").rel == "alias.md"
    assert paths.resolve(root, "alias.md").leads == "wiki/a.md"
    assert paths.resolve(root, "wiki/new.md").rel == "wiki/new.md"
    assert sorted(e.rel for e in paths.walk(root)) == ["wiki/a.md"]


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(InvalidPathError):
        paths.resolve(tmp_path, "a/x.md")


@pytest.mark.parametrize("name", ["default", "a", "team-notes_2", "0" * 64])
def test_valid_vault_names_pass(name: str) -> None:
    assert paths.check_vault_name(name) == name


@pytest.mark.parametrize("name", ["", "Default", "-x", "_x", "a b", "a.b", "../x", "0" * 65, "ä"])
def test_invalid_vault_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidVaultNameError):
        paths.check_vault_name(name)


def test_walk_skips_dot_directories_and_dot_files(tmp_path: Path) -> None:
    for rel in ["a.md", "wiki/b.md", "wiki/deep/c.png", ".git/HEAD", ".secondbrain/index.db",
                "wiki/.obsidian/x.json", ".hidden.md", "wiki/.sbtmp-123"]:  # fmt: skip
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
    found = sorted(entry.rel for entry in paths.walk(tmp_path))
    assert found == ["a.md", "wiki/b.md", "wiki/deep/c.png"]


def test_walk_reports_size_and_nanosecond_mtime(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello")
    os.utime(tmp_path / "a.md", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    (entry,) = list(paths.walk(tmp_path))
    assert entry.size == 5
    assert entry.mtime_ns == 1_700_000_000_123_456_789


def test_walk_does_not_follow_symlinks_out_of_the_vault(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("x")
    (vault / "dir-link").symlink_to(outside, target_is_directory=True)
    (vault / "file-link.md").symlink_to(outside / "secret.md")
    (vault / "inside.md").write_text("x")
    (vault / "inside-link.md").symlink_to(vault / "inside.md")
    assert sorted(e.rel for e in paths.walk(vault)) == ["inside.md"]


def test_walk_passes_over_hostile_files_and_reports_each_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[remote]\n")
    expected = plant_hostile_files(tmp_path)
    del expected["wiki/latin1.md"]  # what it holds is the index's concern, not the walk's
    (tmp_path / "wiki" / "fine.md").write_text("x")
    (tmp_path / "wiki" / "alias.md").symlink_to("fine.md")
    (tmp_path / "folder.md").mkdir()  # a folder where a note is expected
    (tmp_path / "folder.md" / "inside.md").write_text("x")
    found: list[Skipped] = []
    entries = sorted(e.rel for e in paths.walk(tmp_path, skipped=found.append))
    assert entries == ["folder.md/inside.md", "wiki/fine.md", "wiki/latin1.md"]
    assert {item.path: item.reason for item in found} == expected
    assert all(str(tmp_path) not in item.path for item in found)
    assert [e.rel for e in paths.walk(tmp_path, "wiki")] == entries[1:]


def test_walk_reports_an_unreadable_folder_and_goes_on(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "a.md").write_text("x")
    (tmp_path / "b.md").write_text("x")
    (tmp_path / "locked").chmod(0)
    found: list[Skipped] = []
    try:
        with unprivileged():
            entries = [e.rel for e in paths.walk(tmp_path, skipped=found.append)]
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert entries == ["b.md"]
    assert found == [Skipped("locked", "unreadable")]


def test_walkable_holds_exactly_for_what_walk_would_yield(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    plant_hostile_files(tmp_path)
    (tmp_path / "wiki" / "fine.md").write_text("x")
    (tmp_path / "wiki" / "alias.md").symlink_to("fine.md")
    (tmp_path / "wiki" / "up").symlink_to("..")
    walked = {e.rel for e in paths.walk(tmp_path)}
    assert walked == {"wiki/fine.md", "wiki/latin1.md"}
    for rel in walked | {"wiki/gone.md", "new-folder/new.md"}:
        assert paths.walkable(tmp_path, rel), rel
    for rel in ["links/git/config", "links/git-config.md", "links/state/instructions.md",
                "wiki/up/wiki/fine.md", "wiki/alias.md", "loops/a.md", "loops/here/a.md",
                ".git/config", "wiki/bad-\udc80.md", "bad-\udcff-folder/inside.md"]:  # fmt: skip
        assert not paths.walkable(tmp_path, rel), rel


def test_shown_escapes_bytes_that_are_not_utf8() -> None:
    assert paths.shown("wiki/a.md") == "wiki/a.md"
    assert paths.shown("wiki/\udc80x.md") == "wiki/\\x80x.md"
    assert paths.shown("\ud83d.md") == "\\ud83d.md"


def test_walk_with_a_prefix_only_visits_that_folder(tmp_path: Path) -> None:
    for rel in ["a.md", "wiki/b.md", "wiki2/c.md"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert [e.rel for e in paths.walk(tmp_path, "wiki")] == ["wiki/b.md"]
    assert list(paths.walk(tmp_path, "missing")) == []


segment = st.one_of(
    st.sampled_from(["..", ".", "", ".git", "a", "é", "~", "C:", "out", "in", "git", "cfg"]),
    st.text(alphabet=st.sampled_from(list("ab./\\ \x00:~é")), max_size=12),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.lists(segment, max_size=6).map("/".join))
def test_no_generated_path_ever_resolves_outside_the_vault(tmp_path: Path, raw: str) -> None:
    root = tmp_path / "vault"
    if not root.exists():
        root.mkdir()
        (tmp_path / "outside").mkdir()
        (root / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
        (root / "in").symlink_to(root, target_is_directory=True)
        (root / ".git").mkdir()
        (root / ".git" / "config").write_text("x")
        (root / "git").symlink_to(".git", target_is_directory=True)
        (root / "cfg").symlink_to(".git/config")
    try:
        resolved = paths.resolve(root, raw)
    except InvalidPathError:
        return
    real = resolved.abs.resolve()
    assert real == root.resolve() or root.resolve() in real.parents
    assert not any(part.startswith(".") for part in resolved.rel.split("/"))
    assert not any(part.startswith(".") for part in real.relative_to(root.resolve()).parts)
    assert "\\" not in resolved.rel
    assert not resolved.rel.startswith("/")


def test_a_direction_control_is_shown_escaped_in_the_error(tmp_path: Path) -> None:
    """The message names the path as sent, the control written out (repr), never acting."""
    with pytest.raises(InvalidPathError) as caught:
        paths.resolve(tmp_path, "wiki/\u202egpj.md")
    assert "\u202e" not in str(caught.value)
    assert "wiki/\\u202egpj.md" in str(caught.value)


CAFE, CAFE_NFD = "café", unicodedata.normalize("NFD", "café")


def _stored(root: Path, raw: str) -> str:
    return paths.stored(root, paths.resolve_note(root, raw)).rel


def test_a_name_stored_decomposed_is_found_by_its_composed_spelling(tmp_path: Path) -> None:
    assert CAFE != CAFE_NFD
    (tmp_path / CAFE_NFD).mkdir()
    (tmp_path / CAFE_NFD / f"{CAFE_NFD}.md").write_text("x")
    assert _stored(tmp_path, f"{CAFE}/{CAFE}") == f"{CAFE_NFD}/{CAFE_NFD}.md"
    assert _stored(tmp_path, f"{CAFE_NFD}/{CAFE}") == f"{CAFE_NFD}/{CAFE_NFD}.md"
    # a new note in the stored folder keeps the folder's spelling, its own name composed
    assert _stored(tmp_path, f"{CAFE}/{CAFE_NFD} 2") == f"{CAFE_NFD}/{CAFE} 2.md"


def test_a_name_stored_composed_is_found_by_its_decomposed_spelling(tmp_path: Path) -> None:
    (tmp_path / f"{CAFE}.md").write_text("x")
    resolved = paths.stored(tmp_path, paths.resolve_note(tmp_path, CAFE_NFD))
    assert resolved.rel == f"{CAFE}.md"
    assert resolved.abs == tmp_path / f"{CAFE}.md"
    assert resolved.leads == f"{CAFE}.md"


def test_a_new_name_is_composed_and_an_exact_one_kept(tmp_path: Path) -> None:
    assert _stored(tmp_path, f"new/{CAFE_NFD}/{CAFE_NFD}") == f"new/{CAFE}/{CAFE}.md"
    (tmp_path / f"{CAFE}.md").write_text("composed")
    (tmp_path / f"{CAFE_NFD}.md").write_text("decomposed")
    assert _stored(tmp_path, CAFE_NFD) == f"{CAFE_NFD}.md"  # both there: each as spelled
    assert _stored(tmp_path, CAFE) == f"{CAFE}.md"
    kept = paths.resolve_note(tmp_path, "plain/ascii")
    assert paths.stored(tmp_path, kept) is kept


def test_the_stored_spelling_is_judged_where_it_leads(tmp_path: Path) -> None:
    root, outside = tmp_path / "v", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / CAFE_NFD).symlink_to(outside)
    with pytest.raises(InvalidPathError, match="outside the vault"):
        paths.stored(root, paths.resolve_note(root, f"{CAFE}/x"))
