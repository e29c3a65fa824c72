"""The copy state saved in a vault: what a restart must not forget."""

from __future__ import annotations

import threading
from pathlib import Path

from vault_core import copies
from vault_core.errors import StorageError


def test_a_saved_state_is_read_back_and_a_damaged_one_reads_as_unreplicated(
    tmp_path: Path,
) -> None:
    state = copies.CopyState("replica", 3, "node-a", 2)
    copies.save(tmp_path, state)
    assert copies.load(tmp_path) == state
    assert copies.is_replica(tmp_path)
    (tmp_path / ".secondbrain" / copies.STATE_FILE).write_text("{not json", encoding="utf-8")
    assert copies.load(tmp_path) == copies.CopyState()


def test_saves_from_many_threads_at_once_all_succeed_and_leave_one_whole_file(
    tmp_path: Path,
) -> None:
    """A lease renewal and a push may save at the same moment: neither may fail for the
    other's temporary file, and no temporary file is left behind."""
    start, failures = threading.Barrier(8), []

    def save(n: int) -> None:
        start.wait()
        for epoch in range(25):
            try:
                copies.save(tmp_path, copies.CopyState("primary", epoch, f"node-{n}"))
            except StorageError as exc:
                failures.append(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert copies.load(tmp_path).epoch == 24
    assert [p.name for p in (tmp_path / ".secondbrain").iterdir()] == [copies.STATE_FILE]
