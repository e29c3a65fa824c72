"""Hostile bytes are decoded in a child process whose bounds the kernel keeps.

A decoder (pypdf for PDFs, Pillow for images) fed a crafted file can loop, allocate without
end or crash, and a thread can be neither stopped nor limited. So the work runs in a child of
our own interpreter, isolated (`-I`, none of the node's environment), under an address-space
bound, a CPU-time bound and a wall-clock bound; past any of them it is killed and the caller
gets a clear error. At most SLOTS children run at once in a process, so all of them together
never take more than SLOTS times the largest address-space bound, however many calls arrive.

A child script imports the standard library and its decoder only (not this package, whose
import costs a second and 180 MB of address space); it reads the file from stdin and writes
one JSON object: exit 0 with the result, 2 with `{"error": reason}`; a MemoryError it lets
through (its address-space bound) exits OUT_OF_MEMORY.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from vault_core import deadline
from vault_core.errors import UnreadableAttachmentError

SLOTS = 2  # children at once per process
OUT_OF_MEMORY = 3
CHILD_ENV = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}
BOUNDS = """\
import resource, runpy, sys
memory, cpu = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
sys.argv = sys.argv[3:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except MemoryError:
    sys.exit(3)
"""  # the bounds hold before the script, its decoder or the file is even loaded

slots = threading.BoundedSemaphore(SLOTS)
"""Held by each running child; a call that finds all SLOTS held waits for one."""


def run(
    script: Path,
    args: list[str],
    source: bytes | IO[bytes],
    path: str,
    *,
    memory: int,
    seconds: float,
    call_deadline: bool = True,
) -> dict[str, Any]:
    """Run the child `script args…` on `source` (bytes, or an open file the child reads as
    its stdin) and return the JSON object it writes. `path` names the file in errors.

    Raises UnreadableAttachmentError with the child's reason when it refuses the file or is
    stopped at a bound. With `call_deadline`, the wait for a free slot counts against the
    bound, and a running call's deadline shortens both (DeadlineError once it has passed);
    without it (the index) the wait is as long as it takes."""
    if call_deadline:
        began = time.monotonic()
        seconds = _seconds_left(seconds)
        if not slots.acquire(timeout=seconds):
            deadline.check()
            raise UnreadableAttachmentError(path, f"{SLOTS} other files are being read; try again")
        seconds = max(0.01, seconds - (time.monotonic() - began))
    else:
        slots.acquire()  # the index follows writes to their end: it waits its turn, however long
    try:
        argv = [str(memory), str(int(seconds) + 1), str(script), *args]
        done = _spawn(argv, source, seconds)
    except subprocess.TimeoutExpired as exc:
        if call_deadline:
            deadline.check()
        raise UnreadableAttachmentError(path, f"reading it took over {seconds:g} s") from exc
    finally:
        slots.release()
    if done.returncode != 0:
        raise UnreadableAttachmentError(path, _reason(done, memory))
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _spawn(
    argv: list[str], source: bytes | IO[bytes], seconds: float
) -> subprocess.CompletedProcess[bytes]:
    data, stdin = (source, None) if isinstance(source, bytes) else (None, source)
    return subprocess.run(  # noqa: S603 — our own interpreter and script, no shell
        [sys.executable, "-I", "-c", BOUNDS, *argv],
        input=data,
        stdin=stdin,  # an open file the child reads itself: the parent never holds its bytes
        capture_output=True,
        timeout=seconds,
        check=False,
        env=CHILD_ENV,  # isolated, and none of the node's settings or secrets
    )


def _seconds_left(bound: float) -> float:
    """The bound, or less when the call's deadline comes sooner (passed: DeadlineError)."""
    limit = deadline.current()
    if limit is None:
        return bound
    deadline.check()
    return max(0.01, min(bound, limit.at - time.monotonic()))


def _reason(done: subprocess.CompletedProcess[bytes], memory: int) -> str:
    if done.returncode == OUT_OF_MEMORY:
        return f"reading it needed more than {memory // 2**20} MiB of memory"
    try:
        return str(json.loads(done.stdout)["error"])
    except (ValueError, KeyError, TypeError):
        return f"the reader stopped (over {memory // 2**20} MiB of memory, its time, or a crash)"
