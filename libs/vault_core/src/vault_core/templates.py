"""Templates, slugs and the paths that capture tools write to (docs/design.md#tools).

`{{title}}`, `{{date}}`, `{{time}}`, `{{datetime}}`, `{{year}}`, `{{month}}`,
`{{day}}` and `{{slug}}` are the placeholders; anything else stays as written.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import unicodedata
from typing import Any

from vault_core import frontmatter
from vault_core.errors import FrontmatterError, InvalidArgumentError
from vault_core.frontmatter import Frontmatter, normalize_tag, tag_values
from vault_core.paths import clean
from vault_core.vault import rfc3339

TEMPLATE_DIR = "templates"
DAILY_DIR = "journal"
INBOX_DIR = "inbox"
_GERMAN = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
_PLACEHOLDER = re.compile(r"\{\{\s*(title|date|time|datetime|year|month|day|slug)\s*\}\}")


def slug(text: str) -> str:
    """Lowercase, ä ö ü ß → ae oe ue ss, other accents dropped, every other run → '-'.

    At most 80 characters; `note` when nothing is left (e.g. a title in Japanese).
    """
    # NFC first: a title typed on macOS spells ä as a + U+0308, which must still become ae.
    lowered = unicodedata.normalize("NFC", text.lower()).translate(_GERMAN)
    ascii_ish = unicodedata.normalize("NFKD", lowered)
    ascii_ish = "".join(ch for ch in ascii_ish if not unicodedata.combining(ch))
    result = re.sub(r"[^a-z0-9]+", "-", ascii_ish).strip("-")
    result = result[:80].rstrip("-")
    return result or "note"


def render(template: str, title: str, now: dt.datetime) -> str:
    """Replace the date, time and title placeholders in a template's text."""
    values = {
        "title": title,
        "date": now.strftime("%Y-%m-%d"),
        "time": now.strftime("%H:%M"),
        "datetime": rfc3339(now),
        "year": now.strftime("%Y"),
        "month": now.strftime("%m"),
        "day": now.strftime("%d"),
        "slug": slug(title),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def template_path(name: str) -> str:
    """`meeting` or `meeting.md` → `templates/meeting.md`; `..` and dot segments refused."""
    name = clean(name)
    return posixpath.join(TEMPLATE_DIR, name if name.lower().endswith(".md") else name + ".md")


def default_template_target(title: str, now: dt.datetime) -> str:
    """Where note_from_template writes without a path: `inbox/YYYY-MM-DD-<slug>.md`."""
    return f"{INBOX_DIR}/{now:%Y-%m-%d}-{slug(title)}.md"


def daily_path(day: dt.date) -> str:
    """`journal/YYYY/YYYY-MM-DD.md`, the same in every layout."""
    return f"{DAILY_DIR}/{day:%Y}/{day:%Y-%m-%d}.md"


def daily_heading(day: dt.date) -> str:
    """`Monday, 2 January 2006` — English whatever the server's locale."""
    weekday = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    month = (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    )
    return f"{weekday[day.weekday()]}, {day.day} {month[day.month - 1]} {day.year}"


def parse_day(text: str) -> dt.date:
    """`YYYY-MM-DD` only, and a real calendar day."""
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text.strip()):
        raise InvalidArgumentError(f"date must be YYYY-MM-DD, e.g. 2026-01-31; got {text!r}")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"{text.strip()} is not a calendar day") from exc


def capture_title(text: str) -> str:
    """The first non-empty line without leading `#-*> `, cut to 60 characters."""
    for line in text.splitlines():
        cleaned = line.strip().lstrip("#-*> ").strip()
        if cleaned:
            return cleaned[:60].rstrip()
    return "capture"


def inbox_path(title: str, now: dt.datetime) -> str:
    """`inbox/YYYY-MM-DD-HHMM-<slug>.md`."""
    return f"{INBOX_DIR}/{now:%Y-%m-%d-%H%M}-{slug(title)}.md"


def numbered(rel: str, n: int) -> str:
    """`inbox/x.md`, 2 → `inbox/x-2.md`: the next free name when a path is taken."""
    root, ext = posixpath.splitext(rel)
    return f"{root}-{n}{ext}"


def new_note(rel: str, title: str, tags: list[str], content: str | None, **fields: Any) -> str:
    """A note's text: `content` (or `# title`) under frontmatter with title, tags and `fields`."""
    body = content if content is not None and content.strip() else f"# {title}\n"
    split = frontmatter.split(body)
    fm = Frontmatter(split.yaml_text)
    if fm.error:
        raise FrontmatterError(rel, fm.error)
    fm.set("title", title)
    fm.set("tags", list(dict.fromkeys([*tag_values(fm.get("tags")), *clean_tags(tags)])))
    for key, value in fields.items():
        fm.set(key, value)
    body = split.body if split.body.endswith("\n") or not split.body else split.body + "\n"
    return frontmatter.join(fm.render(), body)


def clean_tags(tags: list[str]) -> list[str]:
    """Tags as the frontmatter keeps them (no `#`, trimmed), empty ones left out."""
    return [t for t in (normalize_tag(tag) for tag in tags) if t]
