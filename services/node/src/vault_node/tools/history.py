"""Tools over a vault's git history (docs/design.md#tools): list revisions, compare, restore one.

All three need the vault's repository; without it they answer `versioning_off`.
"""

from __future__ import annotations

from typing import Any

from vault_core import (
    NOTE_LIMIT,
    NotAFileError,
    NoteNotFoundError,
    WriteOp,
    edit,
    read_limited,
    scope,
    text,
)
from vault_node.context import Call
from vault_node.tools.base import READS, Hints, flag, integer, tool
from vault_node.tools.base import text as text_param
from vault_node.tools.common import NOTE_PATH, any_path
from vault_node.tools.shape import STR, arr, obj, result_schema, write_schema

REVISION = obj({"commit": STR, "when": STR, "author": STR, "message": STR, "path": STR})


@tool(
    title="History of a note",
    description=(
        "The commits that changed a note, newest first, following moves: short id, time, "
        "author, message and the note's path then. Use the ids with note_diff and note_restore."
    ),
    kind="read",
    hints=READS,
    params={
        "path": text_param(NOTE_PATH, required=True),
        "limit": integer("How many revisions (1-100, else 20).", 20, reset=(1, 100)),
    },
    output=result_schema({"vault": STR, "path": STR, "revisions": arr(REVISION)}),
)
def note_history(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    git = call.opened.history()
    rel = any_path(call.vault, call.args["path"]).rel
    revisions = [vars(r) for r in git.history(rel, call.args["limit"])]
    if scope.current() is not None:
        revisions = [_seen(r) for r in revisions if scope.visible(r["path"])]
    return {"vault": call.vault.name, "path": rel, "revisions": revisions}


def _seen(revision: dict[str, Any]) -> dict[str, Any]:
    """A revision as a caller with path rules sees it: before a move from a folder it may not
    see the history stops, and the message names only the tool and the note's own path (a
    move's or a replace's message may name notes it may not see)."""
    tool_name = revision["message"].split(":", 1)[0].strip()
    return {**revision, "message": f"{tool_name}: {revision['path']}"}


@tool(
    title="Compare revisions",
    description=(
        "A unified diff of a note between two revisions, or a revision and the file now. "
        "Without arguments: the last change (the previous revision against the file)."
    ),
    kind="read",
    hints=READS,
    params={
        "path": text_param(NOTE_PATH, required=True),
        "from": text_param("Older revision id from note_history (default: the previous one)."),
        "to": text_param("Newer revision id (default: the file as it is now)."),
    },
    output=result_schema({"vault": STR, "path": STR, "from": STR, "to": STR, "diff": STR}),
)
def note_diff(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    git = call.opened.history()
    rel = any_path(call.vault, call.args["path"]).rel
    start = call.args["from"] or git.previous_revision(rel)
    if start is None:
        raise NoteNotFoundError(rel)
    end = call.args["to"] or None
    working = None
    if end is None:
        try:
            working = read_limited(call.vault.resolve(rel), NOTE_LIMIT)[0]
        except (NoteNotFoundError, NotAFileError):
            working = None  # gone from disk: the diff shows it deleted
    diff = git.diff(rel, start, end, working)
    return {
        "vault": call.vault.name,
        "path": rel,
        "from": git.resolve(start)[:12],
        "to": git.resolve(end)[:12] if end else "working copy",
        "diff": diff,
    }


@tool(
    title="Restore a revision",
    description=(
        "Put a note (also a deleted one) back as it was in an earlier revision. The current "
        "text is trashed and stays in history, so a restore can be undone. Try dry_run first."
    ),
    kind="write",
    hints=Hints(read_only=False, destructive=True, idempotent=True),
    params={
        "path": text_param(NOTE_PATH, required=True),
        "revision": text_param(
            "Revision id from note_history (at least 4 hex characters).", required=True
        ),
        "dry_run": flag("Show the diff without writing.", False),
    },
    output=write_schema({"restored_from": STR}),
)
def note_restore(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    git = call.opened.history()
    rel = call.vault.resolve_for_write(call.args["path"]).rel
    sha = git.resolve(call.args["revision"])
    restored = text.decode(git.contents(rel, sha), rel).text
    op = WriteOp(
        rel,
        lambda current, exists: restored,
        dry_run=call.args["dry_run"],
        reason=f"note_restore: {rel} from {sha[:12]}",
        skip_touch=True,
    )
    result = edit.apply(call.vault, op, call.actor)
    return {**result.response(), "restored_from": sha[:12]}
