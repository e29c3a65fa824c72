"""The part of a vault the running call may see and change (folder-scoped access).

The node sets the caller's path rules for the duration of a call (`applied`), the way it
sets the call's deadline; everything in vault_core honours them from there, so no tool
has to: a path outside the read rules does not exist (`Vault.resolve` answers "not
found", `walk` leaves it out), the index's reader connections see only visible rows (temp
views shadow its tables, see `views`), and a write outside the write rules is refused
(`check_write`) before anything of it is read, with the same answer whether or not
something is there. Work outside a call (the watcher, the CLI) has no rules and sees all.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

from vault_core.errors import OutsideRulesError


class Rules(Protocol):
    """What vault_core needs of a caller's path rules (tickets.Reach is one)."""

    @property
    def read(self) -> tuple[str, ...]: ...

    @property
    def exclude(self) -> tuple[str, ...]: ...

    def reads(self, rel: str) -> bool: ...

    def writes(self, rel: str) -> bool: ...

    def describe(self) -> str: ...


_CURRENT: ContextVar[Rules | None] = ContextVar("vault_core_scope", default=None)


def current() -> Rules | None:
    """The rules of the running call; None when it may see and change the whole vault."""
    return _CURRENT.get()


@contextlib.contextmanager
def applied(rules: Rules | None) -> Iterator[None]:
    """`rules` over everything done inside the block, in the current thread."""
    token = _CURRENT.set(rules)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def lifted() -> contextlib.AbstractContextManager[None]:
    """No rules inside the block: for a check that must see what the caller cannot (does
    an invisible note link here?) and answers only yes or no."""
    return applied(None)


def visible(rel: str, *leads: str) -> bool:
    """May the running call see `rel` — and where it `leads` through symbolic links?"""
    rules = _CURRENT.get()
    return rules is None or all(rules.reads(path) for path in (rel, *leads))


def check_write(rel: str, *leads: str) -> None:
    """Raise OutsideRulesError unless the running call may write `rel` and where it `leads`
    through symbolic links. The error names `rel` alone: where a link leads stays unsaid."""
    rules = _CURRENT.get()
    if rules is not None and not all(rules.writes(path) for path in (rel, *leads)):
        raise OutsideRulesError(rel, rules.describe())


def key() -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """What the index's views depend on: the read and excluded folders, or None."""
    rules = _CURRENT.get()
    return None if rules is None else (rules.read, rules.exclude)


def normal(path: str) -> str:
    """`path` in the one normal form rules and paths are compared in, NFC (as `tickets`
    compares them): a name stored decomposed on disk is the name its rule spells."""
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def folded(path: str) -> str:
    """`path` as an exclusion compares it: NFC and case-folded, since a case-insensitive
    file system opens an excluded `Secret/` for a path spelled `SECRET/`."""
    if path.isascii():
        return path.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).casefold())


FUNCTIONS = {"sb_normal": normal, "sb_folded": folded}
"""The SQL functions `clause` calls: every index connection has them (`Index._connect`)."""


def clause(column: str, folders: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    """SQL true where `column` names a visible path, in whatever normal form and (for the
    exclusions) case it is stored: what `Rules.reads` answers for it. A read folder is a
    range of the column as stored ('0' is the character after '/'), so an index on the
    column serves it: a path is inside an ASCII folder in NFC exactly when it is as
    stored, since '/' neither composes nor decomposes. An exclusion compares an ASCII path
    under NOCASE, its case fold; any other path is normalised and case-folded in Python
    first. The folders are cleaned rules (no NUL, no control characters), inlined as
    quoted literals: a view takes no parameters."""
    read, exclude = folders
    inside = " OR ".join(_inside(column, normal(prefix)) for prefix in read) or "0"
    if not exclude:
        return f"({inside})"
    # As many bytes as characters: ASCII (a GLOB for a character outside it cost 3 µs a
    # row), compared under NOCASE, lower() without making a string (a third of the cost).
    ascii_only = f"length(CAST({column} AS BLOB)) = length({column})"
    hidden = [folded(prefix) for prefix in exclude]
    by_case = " OR ".join(_under(column, prefix, " COLLATE NOCASE") for prefix in hidden)
    by_fold = " OR ".join(_under(f"sb_folded({column})", prefix) for prefix in hidden)
    return f"(({inside}) AND NOT CASE WHEN {ascii_only} THEN ({by_case}) ELSE ({by_fold}) END)"


def _inside(column: str, prefix: str) -> str:
    stable = _stable(prefix)
    if stable == prefix:
        return _under(column, prefix)
    return f"({_under(column, stable)} AND {_under(f'sb_normal({column})', prefix)})"


_SINGLETONS = re.compile(r"[^ -~]|[K;`]")
"""Where a folder's stored spellings may part from its NFC form: at the first character
outside ASCII, or the first of the three ASCII ones that a single other character turns
into under NFC (K from U+212A KELVIN SIGN, ';' from U+037E, '`' from U+1FEF)."""


def _stable(prefix: str) -> str:
    """The longest folder above `prefix` (or itself) that every stored spelling of a path
    inside `prefix` begins with, byte for byte."""
    cut = _SINGLETONS.search(prefix)
    return prefix if cut is None else prefix[: cut.start()].rpartition("/")[0]


def _under(expression: str, prefix: str, collate: str = "") -> str:
    if not prefix:  # the vault's root: everything
        return "1"
    literal, below, after = (_quoted(p) + collate for p in (prefix, prefix + "/", prefix + "0"))
    return f"({expression} = {literal} OR ({expression} >= {below} AND {expression} < {after}))"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SHADOWED = ("tags", "tasks", "headings", "aliases", "names", "embeddings", "embedded")
"""Tables keyed by a note's `path`, each shadowed by a view of the visible rows."""


def views(folders: tuple[tuple[str, ...], tuple[str, ...]]) -> list[str]:
    """The temp views that make a reader connection see only visible notes. Unqualified
    table names resolve to the temp schema first, so every query the index runs is scoped
    without a change to it. A link from a visible note to an invisible one keeps its text
    and loses its resolution: it reads as a link that does not resolve, like a broken one,
    so nothing tells whether or where it leads — unless it resolves among the visible notes
    alone (`[[plan]]` where the vault holds a visible and an invisible plan): then it leads
    where it would in a vault of just those notes."""
    path = clause("path", folders)
    made = [f"CREATE TEMP VIEW notes AS SELECT rowid AS rowid, * FROM main.notes WHERE {path}"]
    made += [
        f"CREATE TEMP VIEW {name} AS SELECT * FROM main.{name} WHERE {path}" for name in SHADOWED
    ]
    made.append(
        "CREATE TEMP VIEW links AS SELECT src, target, anchor, alias, wiki,"
        f" CASE WHEN resolved != '' AND {clause('resolved', folders)} THEN resolved ELSE"
        " coalesce((SELECT r.resolved FROM temp.relinked r"
        f" WHERE r.rules = {_quoted(repr(folders))} AND r.id = l.rowid), '')"
        f" END AS resolved, key FROM main.links l WHERE {clause('src', folders)}"
    )
    return made


DROPS = [f"DROP VIEW IF EXISTS temp.{name}" for name in ("notes", *SHADOWED, "links")]
TABLES = [
    "CREATE TEMP TABLE IF NOT EXISTS relinked (rules TEXT NOT NULL, id INTEGER NOT NULL,"
    " resolved TEXT NOT NULL, PRIMARY KEY (rules, id))",
    "CREATE TEMP TABLE IF NOT EXISTS relinked_at (rules TEXT PRIMARY KEY, version INTEGER)",
]
"""What the links view reads besides the index: links resolved among the visible notes
(`linkstore.resolve_visible`), per set of rules (a pooled connection serves callers with
other rules in turn), and the state of the index each was resolved in."""
