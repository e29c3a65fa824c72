"""Helpers that tests of this and other packages reuse: a vault on disk with a fixed clock."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from vault_core.vault import Vault

FIXED_NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


class Clock:
    """A settable clock: `clock.now` is what the vault sees as the current time."""

    def __init__(self, now: dt.datetime = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def make_vault(
    root: Path, files: dict[str, str | bytes] | None = None, name: str = "test"
) -> Vault:
    """A vault in `root/name` holding `files` (vault-relative path → text or bytes)."""
    vault_root = root / name
    vault_root.mkdir(parents=True, exist_ok=True)
    for rel, content in (files or {}).items():
        target = vault_root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8"))
    return Vault(vault_root, name, clock=Clock())


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (dot directories included) → its bytes: proves nothing changed."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def corpus_dir() -> Path:
    """The Obsidian Help vault in `../shared/corpora` beside the repository.

    `SECONDBRAIN_CORPUS` overrides the location. Tests that need it fail when it
    is missing rather than skip: a skipped corpus test would prove nothing.
    """
    override = os.environ.get("SECONDBRAIN_CORPUS")
    if override:
        return Path(override)
    repo = Path(__file__).resolve().parents[4]
    return repo.parent / "shared" / "corpora" / "obsidian-help-en"
