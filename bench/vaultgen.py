"""A seeded generator of realistic vaults: frontmatter, headings, links, tags, tasks, code.

The same seed and size always give the same files, so runs compare. Tags follow
a long-tailed distribution (a few everywhere, most rare), links point mostly to
existing notes by file name, some by path, some with anchors or aliases, a few
nowhere; code blocks hold `#include` lines and `[[links]]` that must be ignored.
`nested=True` gives a large vault's shape instead: eight top folders of subfolders holding
at most 200 notes each, whatever the size, and a hub note (`wiki/Hub.md`) that 500 notes
link to at any size.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

FOLDERS = ["wiki", "raw", "inbox", "projects", "areas", "resources", "journal", "zettel"]
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "fen",
             "gal", "hem", "jor", "lum", "nar", "ost", "pry", "sul", "tev", "ulm", "wex"]  # fmt: skip


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


FOLDER_NOTES = 200  # notes per subfolder of a nested vault
HUB = "wiki/Hub"
HUB_LINKS = 500  # notes linking to the hub, at any size


def note_names(n: int, rng: random.Random, words: list[str], *, nested: bool = False) -> list[str]:
    names = []
    for i in range(n):
        folder = FOLDERS[i % len(FOLDERS)]
        if nested:
            sub = f"/{words[(i // len(FOLDERS)) // FOLDER_NOTES]}"
        else:
            sub = f"/{rng.choice(words)}" if i % 3 == 0 else ""
        names.append(f"{folder}{sub}/{' '.join(rng.sample(words, 2)).title()} {i}")
    if nested and names:
        names[0] = HUB
    return names


def paragraph(rng: random.Random, words: list[str], length: int) -> str:
    chosen = [rng.choice(words) for _ in range(length)]
    chosen[0] = chosen[0].capitalize()
    return " ".join(chosen) + "."


def link(rng: random.Random, names: list[str]) -> str:
    target = rng.choice(names)
    stem = target.rsplit("/", 1)[-1]
    roll = rng.random()
    if roll < 0.55:
        return f"[[{stem}]]"
    if roll < 0.7:
        return f"[[{target}]]"
    if roll < 0.8:
        return f"[[{stem}#Details|see details]]"
    if roll < 0.9:
        return f"[[{stem}|{stem.lower()}]]"
    if roll < 0.95:
        return f"[{stem}]({target.replace(' ', '%20')}.md)"
    return f"[[Missing {rng.randint(0, 10**6)}]]"


def note_text(
    i: int, names: list[str], tags: list[str], rng: random.Random, words: list[str], hub: int = 0
) -> str:
    title = names[i].rsplit("/", 1)[-1]
    chosen = sorted({tags[min(int(rng.paretovariate(1.2)) - 1, len(tags) - 1)] for _ in range(3)})
    lines = ["---", f"title: {title}", f"tags: [{', '.join(chosen)}]",
             f"created: 2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z"]  # fmt: skip
    if i % 7 == 0:
        lines.append(f"aliases: [{title} alias]")
    lines += ["---", f"# {title}", "", paragraph(rng, words, rng.randint(20, 60)), ""]
    for heading in ("Summary", "Details", "Open questions"):
        lines += [f"## {heading}", ""]
        body = paragraph(rng, words, rng.randint(15, 50))
        lines += [f"{body} {link(rng, names)} and {link(rng, names)} #{rng.choice(tags)}", ""]
    if hub and i % hub == 0 and i:
        lines += [f"See the [[{HUB.rsplit('/', 1)[-1]}]].", ""]
    lines += ["```c", "#include <stdio.h>", "// [[Not A Link]] #nottag", "```", ""]
    lines += [f"- [{'x' if rng.random() < 0.4 else ' '}] {paragraph(rng, words, 6)}"
              for _ in range(rng.randint(0, 3))]  # fmt: skip
    return "\n".join(lines) + "\n"


def generate(root: Path, n: int, seed: int = 42, *, nested: bool = False) -> Path:
    """Write `n` notes (and n/50 attachments) under `root`; returns root."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    tags = [f"topic/{w}" if k % 5 == 0 else w for k, w in enumerate(rng.sample(words, 400))]
    names = note_names(n, rng, words, nested=nested)
    hub = max(1, (n - 1) // HUB_LINKS) if nested else 0
    for i, name in enumerate(names):
        target = root / f"{name}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note_text(i, names, tags, rng, words, hub), encoding="utf-8")
    for k in range(max(1, n // 50)):
        attachment = root / "attachments" / f"image-{k}.png"
        attachment.parent.mkdir(parents=True, exist_ok=True)
        attachment.write_bytes(rng.randbytes(2048))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--nested", action="store_true", help="a large vault's folder shape")
    args = parser.parse_args()
    generate(args.root, args.notes, args.seed, nested=args.nested)
    print(f"wrote {args.notes} notes to {args.root}")


if __name__ == "__main__":
    main()
