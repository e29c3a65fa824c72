"""Purging the trash: copies older than the cutoff go, newer ones and other files stay."""

from __future__ import annotations

import os

from vault_core import edit
from vault_core.ops import trash
from vault_core.storage import to_trash
from vault_core.vault import Vault

NOW = 1_800_000_000.0
DAY = 86_400.0


def aged(path: os.PathLike[str], seconds: float) -> None:
    os.utime(path, (NOW - seconds, NOW - seconds))


def test_copies_older_than_the_cutoff_are_purged_and_newer_ones_kept(vault: Vault) -> None:
    old = to_trash(vault.state_dir, "wiki/old.md", b"old")
    recent = to_trash(vault.state_dir, "wiki/recent.md", b"recent")
    aged(old, 31 * DAY)
    aged(recent, 29 * DAY)
    assert trash.purge(vault.state_dir, NOW - 30 * DAY) == 1
    assert list((vault.state_dir / "trash").iterdir()) == [recent]


def test_a_deleted_note_leaves_its_trash_copy_until_the_cutoff_passes_it(vault: Vault) -> None:
    (vault.root / "a.md").write_text("# A\n")
    edit.delete(vault, "a.md")
    (copy,) = (vault.state_dir / "trash").iterdir()
    aged(copy, DAY)
    assert trash.purge(vault.state_dir, NOW - 2 * DAY) == 0
    assert trash.purge(vault.state_dir, NOW) == 1
    assert not copy.exists()


def test_a_folder_in_the_trash_is_left_alone(vault: Vault) -> None:
    folder = vault.state_dir / "trash" / "kept"
    folder.mkdir(parents=True)
    aged(folder, 365 * DAY)
    assert trash.purge(vault.state_dir, NOW) == 0
    assert folder.is_dir()


def test_a_vault_without_a_trash_has_nothing_to_purge(vault: Vault) -> None:
    assert trash.purge(vault.state_dir, NOW) == 0
    assert not (vault.state_dir / "trash").exists()
