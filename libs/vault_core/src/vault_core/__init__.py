"""Vault core: Markdown vaults as notes that tools can read and change safely.

Paths (spec §9), notes and frontmatter (§8), the one write path (§11), section
edits (§12), templates and layouts. No HTTP here; the node builds on this.
"""

from vault_core.edit import DRY_RUN, NO_CHANGE, WriteOp, WriteResult, edit_frontmatter
from vault_core.errors import (
    ATTACHMENT_LIMIT,
    ERROR_CODES,
    NOTE_LIMIT,
    AmbiguousEditError,
    AttachmentTypeError,
    EncodingError,
    ExistsError,
    FrontmatterError,
    HashMismatchError,
    HeadingNotFoundError,
    InvalidArgumentError,
    InvalidPathError,
    InvalidVaultNameError,
    NotAFileError,
    NoteExistsError,
    NoteNotFoundError,
    NotFoundError,
    StorageError,
    TemplateNotFoundError,
    TooLargeError,
    UnknownLayoutError,
    UnknownRevisionError,
    UnreadableAttachmentError,
    VaultError,
    VaultExistsError,
    VersioningOffError,
)
from vault_core.frontmatter import Frontmatter
from vault_core.gitstore import GitStore, Identity, Revision
from vault_core.index import Index, ReconcileStats
from vault_core.library import Library, OpenVault, Settings
from vault_core.markdown import Heading, Link, Task
from vault_core.note import Note, parse
from vault_core.paths import Entry, Resolved, check_vault_name
from vault_core.text import content_hash
from vault_core.vault import ATTACHMENT_TYPES, Actor, Vault
from vault_core.watch import Watcher

__all__ = [
    "ATTACHMENT_LIMIT",
    "ATTACHMENT_TYPES",
    "DRY_RUN",
    "ERROR_CODES",
    "NOTE_LIMIT",
    "NO_CHANGE",
    "Actor",
    "AmbiguousEditError",
    "AttachmentTypeError",
    "EncodingError",
    "Entry",
    "ExistsError",
    "Frontmatter",
    "FrontmatterError",
    "GitStore",
    "HashMismatchError",
    "Heading",
    "HeadingNotFoundError",
    "Identity",
    "Index",
    "InvalidArgumentError",
    "InvalidPathError",
    "InvalidVaultNameError",
    "Library",
    "Link",
    "NotAFileError",
    "NotFoundError",
    "Note",
    "NoteExistsError",
    "NoteNotFoundError",
    "OpenVault",
    "ReconcileStats",
    "Resolved",
    "Revision",
    "Settings",
    "StorageError",
    "Task",
    "TemplateNotFoundError",
    "TooLargeError",
    "UnknownLayoutError",
    "UnknownRevisionError",
    "UnreadableAttachmentError",
    "Vault",
    "VaultError",
    "VaultExistsError",
    "VersioningOffError",
    "Watcher",
    "WriteOp",
    "WriteResult",
    "check_vault_name",
    "content_hash",
    "edit_frontmatter",
    "parse",
]
