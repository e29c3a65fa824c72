"""A note cut into the pieces its vectors are made of: one per heading section.

Each piece is at most SIZE characters (a long section is cut at line or word ends, with
OVERLAP characters carried over so a sentence cut in two is whole in one of them) and
starts with the note's title and the section's heading, so "Sync" under "Troubleshooting"
embeds as what it is about. At most MAX_CHUNKS pieces a note: a 4 MiB note costs as much
as a long one, not a thousand times more.
"""

from __future__ import annotations

from dataclasses import dataclass

from vault_core import sections

SIZE = 1200
OVERLAP = 150
MAX_CHUNKS = 64


@dataclass(frozen=True)
class Chunk:
    heading: str  # the section's heading, "" for the text before the first one
    text: str  # what is embedded: title, heading and the section's text


def chunks(title: str, body: str) -> list[Chunk]:
    """The note's pieces, in order (none for an empty note)."""
    lines = body.split("\n")
    starts = [(s.start, s.text) for s in sections.headings(body)]
    spans = [(0, ""), *starts] if not starts or starts[0][0] > 0 else starts
    found: list[Chunk] = []
    for i, (start, heading) in enumerate(spans):
        end = spans[i + 1][0] if i + 1 < len(spans) else len(lines)
        text = "\n".join(lines[start:end]).strip()
        if not text:
            continue
        head = " — ".join(part for part in (title, heading) if part)
        found += [Chunk(heading, f"{head}\n{piece}") for piece in _pieces(text)]
        if len(found) >= MAX_CHUNKS:
            return found[:MAX_CHUNKS]
    return found


def _pieces(text: str) -> list[str]:
    if len(text) <= SIZE:
        return [text]
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + SIZE)
        if end < len(text):
            cut = max(
                text.rfind("\n", start + SIZE // 2, end), text.rfind(" ", start + SIZE // 2, end)
            )
            end = cut if cut > start else end
        pieces.append(text[start:end].strip())
        if end >= len(text) or len(pieces) >= MAX_CHUNKS:
            break
        start = max(end - OVERLAP, start + 1)
    return [piece for piece in pieces if piece]
