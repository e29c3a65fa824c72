"""Vault layouts (`vault_create`): folders, templates, instructions, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault_core import layouts
from vault_core.errors import InvalidVaultNameError, UnknownLayoutError, VaultExistsError
from vault_core.testing import snapshot

EXPECTED = {
    "wiki-raw": (
        ["wiki", "raw", "inbox", "journal", "attachments", "templates"],
        ["wiki-page", "source", "meeting"],
    ),
    "zettelkasten": (
        ["zettel", "literature", "inbox", "journal", "attachments", "templates"],
        ["zettel", "literature"],
    ),
    "para": (
        [
            "projects",
            "areas",
            "resources",
            "archive",
            "inbox",
            "journal",
            "attachments",
            "templates",
        ],
        ["project", "area", "resource"],
    ),
    "empty": ([], []),
}

# The folders whose purpose each layout's instructions explain.
EXPLAINED = {
    "wiki-raw": ["wiki/", "raw/", "inbox"],
    "zettelkasten": ["zettel/", "literature/", "inbox/"],
    "para": ["projects/", "areas/", "resources/", "archive/"],
    "empty": [],
}


def test_the_four_spec_layouts_exist() -> None:
    assert set(layouts.LAYOUTS) == {"wiki-raw", "zettelkasten", "para", "empty"}


@pytest.mark.parametrize("layout", EXPECTED)
def test_a_layout_creates_exactly_its_folders_templates_and_instructions(
    tmp_path: Path, layout: str
) -> None:
    directories, names = EXPECTED[layout]
    created = layouts.create(tmp_path, "my-notes", layout)
    on_disk = snapshot(tmp_path / "my-notes")
    assert set(on_disk) == (
        {f"{d}/.gitkeep" for d in directories}
        | {f"templates/{n}.md" for n in names}
        | {".secondbrain/instructions.md"}
    )
    assert all(on_disk[f"{d}/.gitkeep"] == b"" for d in directories)
    assert created.directories == directories
    assert created.files == [f"{d}/.gitkeep" for d in directories] + [
        f"templates/{n}.md" for n in names
    ]
    assert (created.vault, created.layout, created.root) == (
        "my-notes",
        layout,
        tmp_path / "my-notes",
    )


@pytest.mark.parametrize("layout", EXPECTED)
def test_a_layouts_templates_are_written_as_declared(tmp_path: Path, layout: str) -> None:
    layouts.create(tmp_path, "v", layout)
    for name, text in layouts.LAYOUTS[layout].templates.items():
        written = (tmp_path / "v" / "templates" / f"{name}.md").read_text(encoding="utf-8")
        assert written == text
        assert written.startswith('---\ntitle: "{{title}}"\ntags: []\n---\n# {{title}}\n')


@pytest.mark.parametrize("layout", EXPECTED)
def test_a_layouts_instructions_name_the_vault_and_explain_its_folders(
    tmp_path: Path, layout: str
) -> None:
    created = layouts.create(tmp_path, "team_wiki-2", layout)
    on_disk = (tmp_path / "team_wiki-2" / ".secondbrain" / "instructions.md").read_text("utf-8")
    assert on_disk == created.instructions
    assert on_disk.startswith("# Conventions of the vault team_wiki-2\n\n")
    assert layouts.LAYOUTS[layout].summary in on_disk
    assert "## Working in this vault" in on_disk
    for folder in EXPLAINED[layout]:
        assert folder in on_disk
    assert layouts.read_instructions(created.root) == on_disk


def test_the_default_layout_is_wiki_raw(tmp_path: Path) -> None:
    created = layouts.create(tmp_path, "default")
    assert created.layout == "wiki-raw"
    assert (tmp_path / "default" / "raw" / ".gitkeep").is_file()


def test_creating_an_existing_vault_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    layouts.create(tmp_path, "notes", "para")
    (tmp_path / "notes" / "projects" / "launch.md").write_text("# Launch\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(VaultExistsError) as caught:
        layouts.create(tmp_path, "notes", "wiki-raw")
    assert caught.value.name == "notes"
    assert caught.value.code == "exists"
    assert "notes" in caught.value.message
    assert snapshot(tmp_path) == before


def test_a_folder_made_by_hand_counts_as_an_existing_vault(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.md").write_text("mine\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(VaultExistsError):
        layouts.create(tmp_path, "notes")
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == ["mine.md"]


def test_an_unknown_layout_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(UnknownLayoutError) as caught:
        layouts.create(tmp_path, "notes", "johnny-decimal")
    assert caught.value.layout == "johnny-decimal"
    assert caught.value.code == "invalid_argument"
    for known in ("wiki-raw", "zettelkasten", "para", "empty"):
        assert known in caught.value.message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name",
    ["Bad Name", "../x", ".hidden", "a" * 65, "", "Upper", "-lead", "_lead", "a/b", "a.b", "ä"],
)
def test_an_invalid_vault_name_is_refused_before_anything_is_created(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(InvalidVaultNameError) as caught:
        layouts.create(tmp_path, name, "empty")
    assert caught.value.name == name
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["a", "0", "a" * 64, "my_vault-2"])
def test_a_valid_vault_name_at_the_edges_is_accepted(tmp_path: Path, name: str) -> None:
    assert layouts.create(tmp_path, name, "empty").root == tmp_path / name
    assert (tmp_path / name / ".secondbrain" / "instructions.md").is_file()


def test_read_instructions_of_a_vault_without_them_is_empty(tmp_path: Path) -> None:
    assert layouts.read_instructions(tmp_path) == ""
    (tmp_path / ".secondbrain").mkdir()
    assert layouts.read_instructions(tmp_path) == ""


def test_a_pipe_in_place_of_the_instructions_reads_as_none(tmp_path: Path) -> None:
    (tmp_path / ".secondbrain").mkdir()
    os.mkfifo(tmp_path / ".secondbrain" / "instructions.md")
    assert layouts.read_instructions(tmp_path) == ""  # and returns: nobody writes the pipe


def test_read_instructions_of_a_file_that_is_not_utf8_is_empty(tmp_path: Path) -> None:
    (tmp_path / ".secondbrain").mkdir()
    (tmp_path / ".secondbrain" / "instructions.md").write_bytes(b"\xff\xfe bad")
    assert layouts.read_instructions(tmp_path) == ""


def test_instructions_rewritten_by_hand_are_read_as_written(tmp_path: Path) -> None:
    created = layouts.create(tmp_path, "notes", "empty")
    (created.root / ".secondbrain" / "instructions.md").write_text("Be brief.\n", encoding="utf-8")
    assert layouts.read_instructions(created.root) == "Be brief.\n"
