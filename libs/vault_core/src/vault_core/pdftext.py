"""The text of a PDF's pages, read in a bounded child process so a hostile file cannot hold
the node.

pypdf is pure Python: a crafted file can make it loop or allocate without end, and a thread
cannot be stopped. The child (`vault_core.child`) runs under a wall-clock bound, a CPU-time
bound and an address-space bound; past any of them it is killed, and the caller gets a clear
error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vault_core import child
from vault_core.errors import UnreadableAttachmentError

MAX_BYTES = 32 * 1024 * 1024  # the attachment limit: nothing larger is ever stored
MAX_PAGES = 200  # pages read from one file; the rest are counted, not read
MAX_PAGE_CHARS = 20_000  # a page of dense text is about 5,000
MAX_SECONDS = 20.0
MEMORY_BYTES = 1024 * 1024 * 1024
CHILD = Path(__file__).with_name("pdftext_child.py")


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
    found = child.run(
        CHILD,
        [str(max_pages), str(MAX_PAGE_CHARS)],
        data,
        path,
        memory=MEMORY_BYTES,
        seconds=seconds,
        call_deadline=call_deadline,
    )
    return PdfText(tuple(found["pages"]), found["count"])
