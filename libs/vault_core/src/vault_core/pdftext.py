"""The text of a PDF's pages, read in a child process so a hostile file cannot hold the node.

pypdf is pure Python: a crafted file can make it loop or allocate without end, and a thread
cannot be stopped. The child runs under a wall-clock bound, a CPU-time bound and an
address-space bound; past any of them it is killed, and the caller gets a clear error.
"""

from __future__ import annotations

import io
import json
import logging
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

from vault_core import deadline
from vault_core.errors import UnreadableAttachmentError

MAX_BYTES = 32 * 1024 * 1024  # the attachment limit: nothing larger is ever stored
MAX_PAGES = 200  # pages read from one file; the rest are counted, not read
MAX_PAGE_CHARS = 20_000  # a page of dense text is about 5,000
MAX_SECONDS = 20.0
MEMORY_BYTES = 1024 * 1024 * 1024
CHILD_ENV = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}


@dataclass(frozen=True)
class PdfText:
    """The text of the first `len(pages)` pages of a PDF that has `page_count` pages."""

    pages: tuple[str, ...]
    page_count: int

    @property
    def complete(self) -> bool:
        return len(self.pages) == self.page_count


def extract(
    data: bytes,
    path: str,
    *,
    max_pages: int = MAX_PAGES,
    seconds: float = MAX_SECONDS,
    call_deadline: bool = True,
) -> PdfText:
    """The text of each page (page 1 first). Raises UnreadableAttachmentError for a file that
    is not a PDF, is malformed or encrypted, or takes longer than its bounds allow.

    With `call_deadline`, a running call's deadline shortens the bound (DeadlineError once it
    has passed); the index, which follows writes to their end, reads without it."""
    if len(data) > MAX_BYTES:
        raise UnreadableAttachmentError(path, f"it is over {MAX_BYTES} bytes")
    if not data.startswith(b"%PDF-"):
        raise UnreadableAttachmentError(path, "it does not start like a PDF")
    seconds = _seconds_left(seconds) if call_deadline else seconds
    try:
        done = subprocess.run(  # noqa: S603 — our own interpreter and module, no shell
            [
                sys.executable,
                "-I",
                "-m",
                "vault_core.pdftext",
                str(max_pages),
                str(int(seconds) + 1),
            ],
            input=data,
            capture_output=True,
            timeout=seconds,
            check=False,
            env=CHILD_ENV,  # isolated, and none of the node's settings or secrets
        )
    except subprocess.TimeoutExpired as exc:
        if call_deadline:
            deadline.check()
        raise UnreadableAttachmentError(path, f"reading it took over {seconds:g} s") from exc
    if done.returncode != 0:
        raise UnreadableAttachmentError(path, _reason(done.stdout))
    found = json.loads(done.stdout)
    return PdfText(tuple(found["pages"]), found["count"])


def _seconds_left(bound: float) -> float:
    """The bound, or less when the call's deadline comes sooner (passed: DeadlineError)."""
    limit = deadline.current()
    if limit is None:
        return bound
    deadline.check()
    return max(0.01, min(bound, limit.at - time.monotonic()))


def _reason(stdout: bytes) -> str:
    try:
        return str(json.loads(stdout)["error"])
    except (ValueError, KeyError, TypeError):
        return "the reader ran out of memory or time"


def _child(max_pages: int, cpu_seconds: int) -> int:
    """The child: bounds first, then pypdf; one JSON object on stdout either way. Only the
    kind of failure leaves it (never the file's text or pypdf's message, which may quote it)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    logging.disable(logging.CRITICAL)  # pypdf warns about damage it repairs, on stderr
    try:
        import pypdf  # noqa: PLC0415 — only the child loads pypdf

        reader = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
        if reader.is_encrypted:
            return _answer({"error": "it is encrypted"}, 2)
        count = len(reader.pages)
        pages = [
            (reader.pages[i].extract_text() or "")[:MAX_PAGE_CHARS]
            for i in range(min(count, max_pages))
        ]
    except MemoryError:
        return _answer({"error": "reading it needed more than 1 GiB of memory"}, 2)
    except Exception as exc:  # noqa: BLE001 — the child's boundary: any failure is "malformed"
        return _answer({"error": f"it is malformed ({type(exc).__name__})"}, 2)
    return _answer({"pages": pages, "count": count}, 0)


def _answer(found: dict[str, object], code: int) -> int:
    sys.stdout.write(json.dumps(found))
    return code


if __name__ == "__main__":
    sys.exit(_child(int(sys.argv[1]), int(sys.argv[2])))
