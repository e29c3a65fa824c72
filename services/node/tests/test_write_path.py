"""A note write, followed from HTTP to the disk: which of our modules it passes through.

docs/node.md ("Follow a request") promises a newcomer five: rpc → dispatch → the tool's
module → edit → storage. This test holds the code to that promise, on a real call.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vault_core import storage
from vault_node import dispatch
from vault_node.testing import Harness

pytestmark = pytest.mark.asyncio

ROOTS = {
    "vault_node": Path(dispatch.__file__).parent,
    "vault_core": Path(storage.__file__).parent,
}


def our_modules(stack: traceback.StackSummary) -> list[str]:
    """The modules of ours on a stack, outermost first, each once per run of frames."""
    names: list[str] = []
    for frame in stack:
        path = Path(frame.filename)
        for package, root in ROOTS.items():
            if path.is_relative_to(root):
                name = ".".join((package, *path.relative_to(root).with_suffix("").parts))
                if not names or names[-1] != name:
                    names.append(name)
    return names


def recording(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, stacks: list[list[str]]
) -> None:
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stacks.append([threading.current_thread().name, *our_modules(traceback.extract_stack())])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


async def test_a_note_write_reaches_the_disk_through_five_modules(
    node: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    await node.ok("note_create", {"path": "wiki/path", "content": "Before.\n"})
    arrived: list[list[str]] = []
    written: list[list[str]] = []
    recording(monkeypatch, dispatch, "call_tool", arrived)
    recording(monkeypatch, storage, "_write_all", written)  # where the bytes go to a file

    await node.ok("note_edit", {"path": "wiki/path", "old_string": "Before", "new_string": "After"})

    (loop_side,) = arrived
    worker_side = written[-1]  # the trash copy is written first, then the note itself
    # On the event loop the HTTP request (sent by the test's client, through httpx and
    # Starlette) enters our code at rpc, which hands the call to dispatch; in a worker
    # thread dispatch runs the handler, which writes through edit.
    assert loop_side[1:] == ["vault_node.testing", "vault_node.rpc"], loop_side
    assert worker_side[0].startswith("tool"), worker_side
    assert worker_side[1:] == [
        "vault_node.dispatch",
        "vault_node.tools.write",
        "vault_core.edit",
        "vault_core.storage",
    ]
    assert (node.data / "default" / "wiki" / "path.md").read_text().endswith("After.\n")
