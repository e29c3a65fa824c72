"""No note content ever reaches a log line, whatever the library does or fails at."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from structlog.testing import capture_logs

from vault_core import edit
from vault_core.edit import WriteOp
from vault_core.library import Library, Settings
from vault_core.search import fts as search

SECRET = "zebra-secret-7f3a"


class Exploding:
    """Stands where the index and the git store do, failing with note content in the error."""

    def update_paths(self, paths: Sequence[str]) -> None:
        raise RuntimeError(SECRET)

    def commit(self, message: str, paths: Sequence[str], **_: object) -> None:
        raise OSError(SECRET)


def test_a_broad_matrix_of_operations_logs_no_note_content(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "team").mkdir(parents=True)
    (data / "team" / "a.md").write_text(f"# A\n{SECRET} in the body\n")
    (data / "team" / "bad.md").write_text(f"---\ntitle: [{SECRET}\n---\n")
    (data / "team" / "big.md").write_bytes(SECRET.encode() * 400_000)
    (data / "team" / "latin1.md").write_bytes(SECRET.encode() + b"\xe9")
    with capture_logs() as logs:
        library = Library(data, Settings(watch=False)).open_all()
        opened = library.get("team")
        vault = opened.vault
        edit.apply(vault, WriteOp("b.md", lambda _c, _e: f"{SECRET}\n", reason="note_create: b"))
        edit.apply(vault, WriteOp("b.md", lambda c, _e: c + SECRET, dry_run=True))
        search.search(opened.index, SECRET)
        index, git = vault.index, vault.git
        vault.index = vault.git = Exploding()  # type: ignore[assignment]
        result = edit.apply(vault, WriteOp("c.md", lambda _c, _e: f"{SECRET}\n", reason="r"))
        assert len(result.warnings) == 2
        assert SECRET not in json.dumps(result.warnings)
        vault.index, vault.git = index, git
        edit.delete(vault, "a.md")
        opened.index.reconcile()
        library.close()
    assert logs, "the matrix should have logged something"
    text = json.dumps(logs, default=str)
    assert SECRET not in text
    assert str(tmp_path) not in text
