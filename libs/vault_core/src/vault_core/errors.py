"""Every failure the vault core reports, each with a stable machine code.

Messages are instructions for the caller (often a model): what happened and
which call to make instead. No message ever contains an absolute host path.

    VaultError                        code
    ├── InvalidPathError              invalid_path
    ├── InvalidVaultNameError         invalid_argument
    ├── InvalidArgumentError          invalid_argument
    │   ├── AmbiguousEditError        invalid_argument   (old_string appears N times)
    │   ├── HeadingNotFoundError      not_found          (no heading matching "…")
    │   ├── FrontmatterError          invalid_argument   (block is not valid YAML)
    │   ├── InvalidTextError          invalid_argument   (a lone surrogate in new text)
    │   └── UnknownLayoutError        invalid_argument
    ├── OutsideRulesError             forbidden          (a change outside the path rules)
    ├── LinksOutsideRulesError        forbidden          (link updates would leave the rules)
    ├── IncompleteError               (the cause's code) (stopped part-way; says what was done)
    ├── TooManyNotesError             too_large          (more notes than the caller allowed)
    ├── NotFoundError                 not_found
    │   ├── NoteNotFoundError         not_found
    │   ├── PathNotFoundError         not_found          (nothing at a note or attachment path)
    │   ├── TemplateNotFoundError     not_found
    │   └── UnknownRevisionError      not_found
    ├── ExistsError                   exists
    │   ├── NoteExistsError           exists
    │   └── VaultExistsError          exists
    ├── HashMismatchError             hash_mismatch
    ├── TooLargeError                 too_large
    ├── NotAFileError                 invalid_path       (the path is a directory)
    ├── EncodingError                 invalid_argument   (not UTF-8)
    ├── AttachmentTypeError           invalid_argument
    ├── UnreadableAttachmentError     unreadable         (a PDF or image that cannot be read)
    ├── VersioningOffError            versioning_off
    ├── ReplicationRefusedError       replication_refused (a replica refused a pack: `reason`)
    ├── DeadlineError                 timeout            (the call ran past its deadline)
    └── StorageError                  internal           (an OS error, translated)
"""

from __future__ import annotations

from collections.abc import Iterable

NOTE_LIMIT = 4 * 1024 * 1024
ATTACHMENT_LIMIT = 32 * 1024 * 1024


class VaultError(Exception):
    """Base of every vault-core failure; `code` is stable, `message` is for people."""

    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidPathError(VaultError):
    code = "invalid_path"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"invalid path: {path!r}: {reason}")
        self.path = path
        self.reason = reason


class InvalidVaultNameError(VaultError):
    code = "invalid_argument"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"invalid vault name: {name!r}; use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
        self.name = name


class InvalidArgumentError(VaultError):
    code = "invalid_argument"


class AmbiguousEditError(InvalidArgumentError):
    def __init__(self, count: int) -> None:
        super().__init__(
            f"old_string appears {count} times; include more surrounding context so it is "
            "unique, or pass replace_all to change every occurrence"
        )
        self.count = count


class HeadingNotFoundError(InvalidArgumentError):
    code = "not_found"

    def __init__(self, heading: str, path: str) -> None:
        super().__init__(
            f'no heading matching "{heading}" in {path}; call note_outline to see its headings'
        )
        self.heading = heading
        self.path = path


class FrontmatterError(InvalidArgumentError):
    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"the frontmatter of {path} is not valid YAML ({detail}); fix the block between "
            "the --- lines with note_edit, then retry"
        )
        self.path = path
        self.detail = detail


class InvalidTextError(InvalidArgumentError):
    def __init__(self, what: str, offset: int) -> None:
        super().__init__(
            f"{what} is not valid Unicode: it holds a lone surrogate (like \\udc80) at "
            f"character {offset}; send text as UTF-8, with every \\ud83d-style escape paired. "
            "Nothing was written"
        )
        self.what = what
        self.offset = offset


class UnknownLayoutError(InvalidArgumentError):
    def __init__(self, layout: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown layout: {layout!r}; use one of {', '.join(known)}")
        self.layout = layout


class OutsideRulesError(VaultError):
    """A change outside the caller's path rules. The same answer whether or not anything is
    at the path, so it tells nothing about what the caller cannot see."""

    code = "forbidden"

    def __init__(self, path: str, rules: str) -> None:
        super().__init__(
            f"{path} is outside where you may write ({rules}); write inside those folders, "
            "or ask the vault's owner for wider access"
        )
        self.path = path


class LinksOutsideRulesError(VaultError):
    """A move or merge whose link updates would reach notes outside the caller's rules."""

    code = "forbidden"

    def __init__(self, path: str, doing: str, rules: str) -> None:
        super().__init__(
            f"{doing} {path} would have to rewrite links to it in notes outside where you "
            f"may write ({rules}); nothing was changed. Ask someone with access to the whole "
            "vault to do it"
        )
        self.path = path


class IncompleteError(VaultError):
    """An operation over several notes stopped part-way; the message says what was done."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class TooManyNotesError(VaultError):
    """An operation over many notes would change more of them than the caller allowed."""

    code = "too_large"


class NotFoundError(VaultError):
    code = "not_found"


class NoteNotFoundError(NotFoundError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"note not found: {path}; call note_search or note_list to find the right path"
        )
        self.path = path


class PathNotFoundError(NotFoundError):
    """Nothing at a path that may name an attachment (or is outside the caller's rules)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no attachment at {path}; call attachment_list to see the attachments")
        self.path = path


class TemplateNotFoundError(NotFoundError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"template not found: {name}; call note_from_template without arguments to list them"
        )
        self.name = name


class UnknownRevisionError(NotFoundError):
    def __init__(self, revision: str, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(
            f"unknown revision: {revision}{suffix}; call note_history for valid revision ids"
        )
        self.revision = revision


class ExistsError(VaultError):
    code = "exists"


class NoteExistsError(ExistsError):
    def __init__(self, path: str, hint: str = "read it first or pass overwrite") -> None:
        super().__init__(f"a note already exists at that path: {path}; {hint}")
        self.path = path


class VaultExistsError(ExistsError):
    def __init__(self, name: str) -> None:
        super().__init__(f"vault already exists: {name}; pick another name or use it as it is")
        self.name = name


class HashMismatchError(VaultError):
    code = "hash_mismatch"

    def __init__(self, path: str, expected: str, actual: str) -> None:
        super().__init__(
            f"the note changed since it was read: {path} now has content_hash {actual}, "
            f"not {expected}; call note_read again and redo the change on the current text"
        )
        self.path = path
        self.expected = expected
        self.actual = actual


class TooLargeError(VaultError):
    code = "too_large"

    def __init__(
        self, path: str, size: int, limit: int, outcome: str = "it is neither read nor indexed"
    ) -> None:
        super().__init__(f"{path} is {size} bytes, over the limit of {limit} bytes; {outcome}")
        self.path = path
        self.size = size
        self.limit = limit


class NotAFileError(VaultError):
    code = "invalid_path"

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is a directory, not a note; call note_list with prefix={path!r}")
        self.path = path


class EncodingError(VaultError):
    code = "invalid_argument"

    def __init__(self, path: str, offset: int) -> None:
        super().__init__(
            f"{path} is not valid UTF-8 (first bad byte at offset {offset}); it cannot be "
            "read or edited as a note"
        )
        self.path = path
        self.offset = offset


class AttachmentTypeError(VaultError):
    code = "invalid_argument"

    def __init__(self, path: str, allowed: Iterable[str]) -> None:
        super().__init__(
            f"attachment type not allowed: {path}; allowed extensions: {' '.join(allowed)}"
        )
        self.path = path


class UnreadableAttachmentError(VaultError):
    """An attachment whose content cannot be read out (malformed, encrypted, too costly)."""

    code = "unreadable"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"cannot read the content of {path}: {reason}; attachment_list still lists it, "
            "and note_backlinks shows the notes that embed it"
        )
        self.path = path
        self.reason = reason


class VersioningOffError(VaultError):
    code = "versioning_off"

    def __init__(self, vault: str, reason: str) -> None:
        super().__init__(f"versioning is off for this vault: {vault} ({reason})")
        self.vault = vault
        self.reason = reason


class DeadlineError(VaultError):
    """Work stopped at the per-call deadline (`vault_core.deadline`): nothing was changed."""

    code = "timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the call ran past its deadline of {seconds:g} s and was stopped; narrow it "
            "(more specific words, a prefix or tag filter, a smaller limit) and retry"
        )
        self.seconds = seconds


class ReplicationRefusedError(VaultError):
    """A replica refused commits from its primary; `reason` is machine-readable
    (head_mismatch, bad_pack, not_fast_forward, bad_path) and `head` is the replica's own."""

    code = "replication_refused"

    def __init__(self, reason: str, detail: str, head: str | None = None) -> None:
        super().__init__(f"replication refused ({reason}): {detail}")
        self.reason = reason
        self.head = head


class StorageError(VaultError):
    """An operating-system failure, translated at the library edge (no host paths)."""

    code = "internal"

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"storage error on {path}: {what}")
        self.path = path
        self.what = what


ERROR_CODES = frozenset(
    {
        "invalid_path",
        "invalid_argument",
        "not_found",
        "exists",
        "hash_mismatch",
        "too_large",
        "versioning_off",
        "replication_refused",
        "timeout",
        "unreadable",
        "forbidden",
        "internal",
    }
)
