"""One process per data directory, for both services: two nodes on one folder would be two
writers on one index and one git repository, two centers two writers on one audit log. So a
process holds an exclusive lock on a file in it for its whole life, and a second one
refuses to start, naming the first (its pid and command, written into the lock file).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class DataDirBusyError(Exception):
    """Another process holds the lock (start-up only: this one refuses to start); `pid`
    (None while the holder is still writing it) and `holder` (its command) name it."""

    def __init__(self, pid: int | None, holder: str) -> None:
        self.pid, self.holder = pid, holder
        who = f"pid {pid}" if pid is not None else "pid not known yet"
        super().__init__(f"another `{holder}` ({who}) uses this data directory")


@contextlib.contextmanager
def exclusive(directory: Path, name: str, holder: str) -> Iterator[None]:
    """Hold `directory/name` (flock, exclusive) until the block ends; the file then names
    this process as `<pid> <holder>`. DataDirBusyError names the process holding it."""
    directory.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(directory / name, flags, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirBusyError(*_holder(descriptor, holder)) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()} {holder}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # closing the last descriptor releases the lock


def _holder(descriptor: int, default: str) -> tuple[int | None, str]:
    """Who the lock file says holds it; a pid of None while the holder is still writing."""
    try:
        text = os.pread(descriptor, 200, 0).decode("utf-8", "replace")
    except OSError:
        return None, default
    pid, _, name = text.strip().partition(" ")
    return (int(pid) if pid.isdigit() else None), (name.strip() or default)
