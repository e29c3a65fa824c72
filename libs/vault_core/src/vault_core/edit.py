"""The one write path (docs/design.md#write-path): every mutation of a note passes through `apply`.

Optimistic locking, dry run, trash-before-destroy, atomic replace, and what follows a write
— the index brought up to date, one attributed commit — are properties of this module, not
of each tool. What follows cannot fail a write that reached the disk: a failure of it comes
back as a warning on the result (and one log line), never as an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from vault_core import diff, frontmatter, storage
from vault_core.errors import (
    ATTACHMENT_LIMIT,
    NOTE_LIMIT,
    AttachmentTypeError,
    FrontmatterError,
    HashMismatchError,
    InvalidPathError,
    NotAFileError,
    NoteExistsError,
    NoteNotFoundError,
    TooLargeError,
    VaultError,
)
from vault_core.frontmatter import Frontmatter, Rfc3339, plain_value
from vault_core.git.store import Identity
from vault_core.paths import Resolved
from vault_core.text import Decoded, check_unicode, content_hash, decode, encode, same_hash
from vault_core.vault import ATTACHMENT_TYPES, Actor, Vault, read_limited, rfc3339

log = structlog.get_logger("vault_core")

Transform = Callable[[str, bool], "str | Edited"]
"""`transform(current_text, exists)`: the new text, or an `Edited` that says more."""

NO_CHANGE = "no change"
DRY_RUN = "dry run: nothing was written"


@dataclass(frozen=True)
class Edited:
    """A transform's answer when it has more to tell than the new text: fields the write's
    answer carries (`note_edit`'s count of replacements), made under the vault's lock."""

    text: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WriteOp:
    """One mutation. `transform(current_text, exists)` returns the new text (LF endings)."""

    path: str
    transform: Transform
    expected_hash: str | None = None
    dry_run: bool = False
    reason: str | None = None  # commit message; None = no commit (summary commit follows)
    commit_as: str | None = None  # the caller's verb: commit as `<verb>: <path>` (or `reason`)
    skip_touch: bool = False  # leave created/updated alone (docs/design.md#bookkeeping-writes)
    only_new: bool = False  # refuse an existing note before reading it: the answer is blind
    exists_hint: str = "read it first or pass overwrite"


@dataclass
class WriteResult:
    """The common write answer (docs/design.md#tool-contract) and what the caller needs next."""

    vault: str
    path: str
    bytes: int
    content_hash: str
    hash_before: str = ""
    created: bool = False
    deleted: bool = False
    dry_run: bool = False
    changed: bool = True
    diff: str = ""
    message: str = ""
    text: str = ""  # the new text (LF), for tools that report on it; never logged
    warnings: list[str] = field(default_factory=list)
    """What did not follow the write (index, history): it is on disk all the same."""
    extra: dict[str, Any] = field(default_factory=dict)

    def response(self) -> dict[str, Any]:
        """The JSON shape: created/deleted/dry_run/diff/message only when they apply."""
        out: dict[str, Any] = {
            "path": self.path,
            "vault": self.vault,
            "bytes": self.bytes,
            "content_hash": self.content_hash,
        }
        for key in ("created", "deleted", "dry_run", "diff", "message", "warnings"):
            value = getattr(self, key)
            if value:
                out[key] = value
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class _Current:
    exists: bool
    data: bytes
    decoded: Decoded | None

    @property
    def text(self) -> str:
        return self.decoded.text if self.decoded else ""


def apply(vault: Vault, op: WriteOp, actor: Actor | None = None) -> WriteResult:
    """The steps of docs/design.md#write-steps, in order."""
    resolved = vault.resolve_for_write(op.path)
    with vault.lock:
        if op.only_new and resolved.abs.is_file():
            raise NoteExistsError(resolved.rel, op.exists_hint)
        current = _read_current(resolved)
        _check_expected(resolved.rel, op.expected_hash, current)
        edited = op.transform(current.text, current.exists)
        if not isinstance(edited, Edited):
            edited = Edited(edited)
        new_text = check_unicode(edited.text, f"the new text of {resolved.rel}")
        if new_text != current.text and not op.skip_touch and new_text:
            new_text = touch(
                new_text, rfc3339(vault.now()), before=current.text if current.exists else None
            )
        if new_text != current.text:
            frontmatter.refuse_limits(new_text, resolved.rel, before=current.text)
        data = encode(new_text, current.decoded)
        result = _result(vault, resolved.rel, current, new_text, data, dry_run=op.dry_run)
        result.extra.update(edited.extra)
        if not result.changed or op.dry_run:
            return result
        storage.write_atomic(
            resolved,
            data,
            trash_from=current.data if current.exists else None,
            state_dir=vault.state_dir,
        )
        result.warnings += reindex(vault, [resolved.rel])
        message = op.reason or (f"{op.commit_as}: {resolved.rel}" if op.commit_as else None)
        if message:
            result.warnings += commit(vault, message, [resolved.rel], actor)
        return result


def reindex(vault: Vault, paths: Sequence[str]) -> list[str]:
    """Bring `paths` up to date in the vault's index; a warning if that failed."""
    if vault.index is None:
        return []
    try:
        vault.index.update_paths(paths)
    except Exception as exc:  # noqa: BLE001 — the write is on disk: report, never fail it
        log.warning("index_update_failed", vault=vault.name, error=type(exc).__name__)
        return [
            f"written, but the search index was not updated ({type(exc).__name__}): search "
            "may miss this change until the index reconciles (`secondbrain reindex` forces it)"
        ]
    return []


def commit(vault: Vault, message: str, paths: Sequence[str], actor: Actor | None) -> list[str]:
    """Commit exactly `paths` to the vault's history, attributed; a warning if that failed."""
    if vault.git is None:
        return []
    author = author_of(actor) if actor else None
    try:
        vault.git.commit(message, paths, author=author, grant_id=actor.grant_id if actor else None)
    except Exception as exc:  # noqa: BLE001 — the write is on disk: report, never fail it
        why = exc.message if isinstance(exc, VaultError) else type(exc).__name__
        log.warning("commit_failed", vault=vault.name, error=getattr(exc, "code", why))
        return [
            f"written, but not recorded in history ({why}); the node records it when it "
            "next starts (vault_recover), and until then note_history does not show it"
        ]
    return []


def author_of(actor: Actor) -> Identity:
    """The git author for a principal: its id as name, a non-routable address as e-mail."""
    return Identity(actor.principal, f"{actor.principal}@secondbrain.invalid")


def _read_current(resolved: Resolved) -> _Current:
    if not resolved.abs.exists() and not resolved.abs.is_symlink():
        return _Current(exists=False, data=b"", decoded=None)
    if resolved.abs.is_dir():
        raise NotAFileError(resolved.rel)
    data, _ = read_limited(resolved, NOTE_LIMIT)
    return _Current(exists=True, data=data, decoded=decode(data, resolved.rel))


def _check_expected(rel: str, expected: str | None, current: _Current) -> None:
    if expected is None or not expected.strip():
        return
    if not current.exists:
        raise NoteNotFoundError(rel)
    actual = content_hash(current.data)
    if not same_hash(expected, actual):
        raise HashMismatchError(rel, expected.strip(), actual)


def _result(
    vault: Vault, rel: str, current: _Current, new_text: str, data: bytes, *, dry_run: bool
) -> WriteResult:
    changed = new_text != current.text or data != current.data
    if changed and len(data) > NOTE_LIMIT:
        raise TooLargeError(rel, len(data), NOTE_LIMIT)
    result = WriteResult(
        vault=vault.name,
        path=rel,
        bytes=len(data),
        content_hash=content_hash(data),
        hash_before=content_hash(current.data) if current.exists else "",
        created=not current.exists,
        dry_run=dry_run,
        changed=changed,
        diff=diff.unified(current.text, new_text, rel, existed=current.exists),
        text=new_text,
    )
    if not changed:
        result.created = False
        result.message = NO_CHANGE
    elif dry_run:
        result.message = DRY_RUN
    return result


def touch(text: str, now: str, *, before: str | None = None) -> str:
    """Maintain `created`/`updated` (docs/design.md#frontmatter-fields) in a write's text.

    Only where the note had a block (`before`, its text until now) or is new
    (`before` None): a hand-written note without metadata gets none. A rewrite
    that dropped the block gets one back with the note's original `created`.
    """
    old = None if before is None else frontmatter.split(before)
    if old is not None and old.yaml_text is None:
        return text
    split = frontmatter.split(text)
    fm = Frontmatter(split.yaml_text)
    if fm.error:
        return text  # an unreadable block is kept byte for byte, never rewritten
    if fm.get("created") in (None, ""):
        previous = Frontmatter(old.yaml_text).get("created") if old is not None else None
        fm.set("created", Rfc3339(plain_value(previous) if previous else now))
    fm.set("updated", Rfc3339(now))
    return frontmatter.join(fm.render(), split.body)


def edit_frontmatter(text: str, path: str, change: Callable[[Frontmatter], None]) -> str:
    """Apply `change` to the parsed block of `text` (creating one if absent); body untouched."""
    split = frontmatter.split(text)
    fm = Frontmatter(split.yaml_text)
    if fm.error:
        raise FrontmatterError(path, fm.error)
    change(fm)
    if not fm.dirty:
        return text
    return frontmatter.join(fm.render(), split.body)


def delete(
    vault: Vault,
    path: str,
    *,
    expected_hash: str | None = None,
    dry_run: bool = False,
    reason: str | None = "",
    actor: Actor | None = None,
) -> WriteResult:
    """Check the hash, copy to the trash, then remove; never without a copy
    (docs/design.md#delete)."""
    resolved = vault.resolve_for_write(path)
    with vault.lock:
        current = _read_current(resolved)
        if not current.exists:
            raise NoteNotFoundError(resolved.rel)
        _check_expected(resolved.rel, expected_hash, current)
        result = WriteResult(
            vault=vault.name,
            path=resolved.rel,
            bytes=0,
            content_hash=content_hash(current.data),
            hash_before=content_hash(current.data),
            deleted=True,
            dry_run=dry_run,
            diff=diff.unified(current.text, "", resolved.rel),
            message=DRY_RUN if dry_run else "moved to .secondbrain/trash",
        )
        if dry_run:
            return result
        storage.remove_to_trash(resolved, current.data, vault.state_dir)
        result.warnings += reindex(vault, [resolved.rel])
        message = f"{vault.verbs.delete}: {resolved.rel}" if reason == "" else reason
        if message:
            result.warnings += commit(vault, message, [resolved.rel], actor)
        return result


def move(
    vault: Vault, source: str, target: str, *, overwrite: bool = False, dry_run: bool = False
) -> tuple[Resolved, Resolved]:
    """Rename a note. An overwritten target is copied to the trash first (docs/design.md#delete).

    No index update and no commit here: note_move follows with link updates, then
    `reindex` and one summary `commit` of everything it touched.
    """
    src, dst = vault.resolve_for_write(source), vault.resolve_for_write(target)
    if src.rel == dst.rel:
        raise InvalidPathError(target, "source and target are the same note")
    with vault.lock:
        if not src.abs.is_file():
            raise NoteNotFoundError(src.rel)
        if dst.abs.is_dir():
            raise NotAFileError(dst.rel)
        existing = dst.abs.is_file()
        if existing and not overwrite:
            raise NoteExistsError(dst.rel, "pick another target or pass overwrite")
        if dry_run:
            return src, dst
        displaced = read_limited(dst, ATTACHMENT_LIMIT)[0] if existing else None
        storage.rename(src, dst, trash_from=displaced, state_dir=vault.state_dir)
        return src, dst


def put_attachment(
    vault: Vault,
    path: str,
    data: bytes,
    *,
    overwrite: bool = False,
    actor: Actor | None = None,
) -> tuple[Resolved, list[str]]:
    """Write a binary attachment (allow-list, 32 MiB); an overwritten file goes to the trash."""
    resolved = vault.resolve_for_write(path, note=False)
    if not resolved.rel.lower().endswith(ATTACHMENT_TYPES):
        raise AttachmentTypeError(resolved.rel, ATTACHMENT_TYPES)
    if len(data) > ATTACHMENT_LIMIT:
        raise TooLargeError(resolved.rel, len(data), ATTACHMENT_LIMIT)
    with vault.lock:
        if resolved.abs.is_dir():
            raise NotAFileError(resolved.rel)
        existing = resolved.abs.is_file()
        if existing and not overwrite:
            raise NoteExistsError(resolved.rel, "pick another path or pass overwrite")
        previous = read_limited(resolved, ATTACHMENT_LIMIT)[0] if existing else None
        storage.write_atomic(resolved, data, trash_from=previous, state_dir=vault.state_dir)
        warnings = reindex(vault, [resolved.rel])
        warnings += commit(vault, f"{vault.verbs.attach}: {resolved.rel}", [resolved.rel], actor)
        return resolved, warnings
