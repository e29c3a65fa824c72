"""The `secondbrain://VAULT/PATH` URIs that name notes and attachments, built and parsed here
for resources, the resource links of tool results, prompts and completions alike.

The vault is the host and the vault-relative path the path, each segment percent-encoded;
the MIME type a resource is announced with follows from the path.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from vault_node.errors import INVALID_PARAMS, ProtocolError

SCHEME = "secondbrain"
TEMPLATE = f"{SCHEME}://{{vault}}/{{+path}}"
"""The one resource template (RFC 6570), as `resources/templates/list` names it."""
MIME = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".svg": "image/svg+xml", ".pdf": "application/pdf",
    ".txt": "text/plain", ".csv": "text/csv", ".json": "application/json",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4", ".wav": "audio/wav",
}  # fmt: skip


def uri_of(vault: str, rel: str) -> str:
    return f"{SCHEME}://{quote(vault, safe='')}/{quote(rel, safe='/')}"


def parse_uri(uri: str) -> tuple[str, str]:
    """(vault, vault-relative path) of a secondbrain URI; ProtocolError for anything else."""
    parts = urlsplit(uri)
    try:
        path = unquote(parts.path, errors="strict").lstrip("/")
    except UnicodeDecodeError:  # percent-escapes that are not UTF-8 name no file
        path = ""
    if parts.scheme != SCHEME or not parts.netloc or not path or parts.query or parts.fragment:
        raise ProtocolError(
            INVALID_PARAMS,
            "invalid_params",
            f"not a note URI: {uri[:200]!r}; notes are {SCHEME}://VAULT/PATH "
            "(resources/list shows them)",
        )
    return unquote(parts.netloc), path


def mime_of(rel: str) -> str:
    """An attachment's MIME type by its extension (a note is `text/markdown`, see `link`)."""
    return MIME.get(PurePosixPath(rel.lower()).suffix, "application/octet-stream")


def link(vault: str, rel: str) -> dict[str, Any]:
    """A `resource_link` content block for the note or attachment at `rel`."""
    mime = "text/markdown" if rel.lower().endswith(".md") else mime_of(rel)
    return {"type": "resource_link", "uri": uri_of(vault, rel), "name": rel, "mimeType": mime}
