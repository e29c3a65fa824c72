"""Every document the code and the docs point at is in the repository, down to the heading.

The design lives in docs/design.md, and a comment says which section it follows
(`docs/design.md#write-path`). A reference to a document a clone does not have — the
workspace's design notes or specification, a numbered section of either (`spec §11.3`,
`DESIGN §5.3`, a bare `§12.1`, `seed 001`), any path into `../shared` — fails here, and so
does a repository path or Markdown link whose file or heading anchor does not exist.
Section signs stay allowed after an RFC number (`RFC 6749 §5.2`): those are public.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "build",
    "dist",
}
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".yaml",
    ".yml",
    ".txt",
    ".cfg",
    ".ini",
    ".sh",
    ".j2",
    ".html",
    ".mako",
    ".json",
    ".caddy",
    ".conf",
    ".service",
}
TEXT_NAMES = {"Makefile", "Caddyfile", "Dockerfile", "run"}

OUTSIDE = "../" + "shared"  # spelled apart so this file does not match itself
FORBIDDEN = (
    (re.compile(re.escape(OUTSIDE)), "a path outside the repository"),
    (re.compile(r"\bDESIGN(?:\.md)?\b"), "the workspace's design notes (now docs/design.md)"),
    (re.compile(r"\bseed[ -]?0\d\d\b", re.IGNORECASE), "a briefing document (seed NNN)"),
    (re.compile(r"spezifikation", re.IGNORECASE), "the German specification"),
)
SECTION_SIGN = re.compile(r"§")
RFC_BEFORE = re.compile(r"RFC\s*\d+\s*$")
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:docs|libs|services|tests|bench|deploy|docker)/[\w./-]*?\.(?:md|py|toml|ya?ml))"
    r"(#[\w-]+)?"
)
MARKDOWN_LINK = re.compile(r"\]\(([^()\s]*?)\)")


def text_files(root: Path = ROOT) -> Iterator[Path]:
    """Every text file of the repository that a reader could follow a reference from."""
    for path in sorted(root.rglob("*")):
        parts = set(path.relative_to(root).parts)
        if parts & SKIPPED_DIRS or any(p.endswith(".egg-info") for p in parts):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            yield path


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The heading anchors of a Markdown file (headings inside fenced code do not count)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def outside_references(text: str) -> Iterator[tuple[int, str]]:
    """(line, why) for every reference to a document outside the repository."""
    for pattern, why in FORBIDDEN:
        for match in pattern.finditer(text):
            yield _line_of(text, match.start()), f"{why}: {match.group(0)!r}"
    for match in SECTION_SIGN.finditer(text):
        if not RFC_BEFORE.search(text[max(0, match.start() - 40) : match.start()]):
            context = text[max(0, match.start() - 20) : match.end() + 10].replace("\n", " ")
            yield _line_of(text, match.start()), f"a numbered section of no RFC: {context!r}"


def broken_targets(text: str, source: Path, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """(line, why) for every repository path or Markdown link whose file or anchor is missing."""
    for match in REPO_PATH.finditer(text):
        yield from _check(root / match.group(1), match.group(2), text, match.start())
    if source.suffix != ".md":
        return
    for match in MARKDOWN_LINK.finditer(text):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or not target:
            continue  # a URL, mailto: …
        file, _, anchor = target.partition("#")
        if file and not file.endswith(".md"):
            if not (source.parent / file).exists():
                yield _line_of(text, match.start()), f"no such file: {target!r}"
            continue
        linked = (source.parent / file) if file else source
        yield from _check(linked, f"#{anchor}" if anchor else None, text, match.start())


def _check(path: Path, anchor: str | None, text: str, offset: int) -> Iterator[tuple[int, str]]:
    line = _line_of(text, offset)
    if not path.exists():
        yield line, f"no such file in the repository: {_shown(path)}"
    elif anchor and path.suffix == ".md" and anchor[1:] not in anchors(path.resolve()):
        yield line, f"no heading {anchor} in {_shown(path)}"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def problems(root: Path = ROOT) -> list[str]:
    found = []
    for path in text_files(root):
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        where = path.relative_to(root)
        for line, why in [*outside_references(text), *broken_targets(text, path, root)]:
            found.append(f"{where}:{line}: {why}")
    return found


def test_every_reference_points_into_the_repository() -> None:
    found = problems()
    assert not found, "references to documents not in the repository:\n" + "\n".join(found)


def test_the_design_has_the_sections_the_code_cites() -> None:
    assert {"write-path", "path-resolution", "tokens", "revocation-feed"} <= anchors(
        ROOT / "docs/design.md"
    )


@pytest.mark.parametrize(
    "text",
    [
        "(spec §9, step 6)",
        '"""Spec §13.1 `vault_stats`: counts."""',
        "refined by DESIGN §3",
        "(DESIGN.md §3)",
        "# ---- extents (§12.1)",
        "spec (§5.4-§5.6) say",
        "Requests (seed 001): a member asks",
        "Seed 001: 10 failed attempts",
        f"in `{OUTSIDE}/corpora` beside the repository",
        "see the Spezifikation",
    ],
)
def test_each_form_of_an_outside_reference_is_caught(text: str) -> None:
    assert list(outside_references(text))


@pytest.mark.parametrize(
    "text",
    [
        "errors follow RFC 6749 §5.2 (and RFC 7591 §3.2.2)",
        "RFC 8252\n  §7.3 lets a native client pick any port",
        "(RFC 7515 §4.1.9, RFC 9068 §4)",
        "as designed in docs/design.md#write-path",
    ],
)
def test_rfc_sections_and_in_repository_references_pass(text: str) -> None:
    assert not list(outside_references(text))


def test_a_missing_file_or_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs/page.md"
    page.write_text("# Page\n\n## Write path\n\n```\n## Not a heading\n```\n", encoding="utf-8")
    code = tmp_path / "module.py"
    cited = "docs/page.md#write-path docs/page.md#not-a-heading docs/gone.md libs/x/missing.py"
    found = [why for _, why in broken_targets(cited, code, tmp_path)]
    assert found == [
        f"no heading #not-a-heading in {tmp_path / 'docs/page.md'}",
        f"no such file in the repository: {tmp_path / 'docs/gone.md'}",
        f"no such file in the repository: {tmp_path / 'libs/x/missing.py'}",
    ]
    linked = "[ok](page.md#write-path) [self](#page) [bad](page.md#nowhere) [gone](x.md)"
    found = [why for _, why in broken_targets(linked, page, tmp_path)]
    assert found == [
        f"no heading #nowhere in {tmp_path / 'docs/page.md'}",
        f"no such file in the repository: {tmp_path / 'docs/x.md'}",
    ]
