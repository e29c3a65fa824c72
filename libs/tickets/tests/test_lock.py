"""One process per data directory: a second holder of the lock is refused, naming the first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tickets.lock import DataDirBusyError, exclusive


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    with exclusive(tmp_path, ".node.lock", "secondbrain serve"):
        with (
            pytest.raises(DataDirBusyError) as refused,
            exclusive(tmp_path, ".node.lock", "secondbrain reindex"),
        ):
            pytest.fail("two holders of one lock")
        assert refused.value.pid == os.getpid()
        assert str(refused.value) == (
            f"another `secondbrain serve` (pid {os.getpid()}) uses this data directory"
        )
    with exclusive(tmp_path, ".node.lock", "secondbrain reindex"):
        text = (tmp_path / ".node.lock").read_text()
    assert text == f"{os.getpid()} secondbrain reindex\n"


def test_the_lock_file_is_private_whoever_made_it(tmp_path: Path) -> None:
    (tmp_path / "center.lock").write_text("")
    (tmp_path / "center.lock").chmod(0o644)
    with exclusive(tmp_path, "center.lock", "secondbrain-center serve"):
        assert (tmp_path / "center.lock").stat().st_mode & 0o777 == 0o600
