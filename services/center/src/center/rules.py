"""Path rules at the center: folders of a vault a member, grant, request or token may reach.

Inside the center rules are `tickets.Paths` (a `Reach` per vault); at every edge — the
CLI, the console, a request's body, a stored row, an answer — they are `Rules`
(`center.names`): `parse` and `loaded` convert in, `stored` and `shown` out.
`tickets.reach` cleans and checks them, and says whether one set lies within another.
Delegation only narrows: every check here that fails says which folder reaches too far and
what it must lie within.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from center.errors import ForbiddenError, InvalidArgumentError
from center.names import RULES_FIELD as FIELD
from center.names import Rules, check_vault
from center.names import rules_of as full
from tickets import ALL_VAULTS, Paths, Reach, RuleError, within
from tickets.reach import NO_PATHS
from tickets.scopes import EXPANSION


def stored(paths: Paths) -> Rules | None:
    """What a row keeps: None when no vault has rules."""
    return {vault: full(reach) for vault, reach in sorted(paths.vaults.items())} or None


def shown(value: Mapping[str, Any] | None) -> Rules:
    """A row's rules as views show them ({} for none)."""
    return stored(loaded(value)) or {}


def loaded(value: Mapping[str, Any] | None) -> Paths:
    """A row's rules as Paths (written by `stored`, so they clean again)."""
    return Paths.from_claim(value or None)


def _reach(rules: Mapping[str, list[str] | None]) -> Reach:
    return Reach.of(rules.get("read"), rules.get("write"), rules.get("exclude") or [])


def parse(value: Rules | None, vaults: Sequence[str]) -> Paths:
    """Rules a caller sent, cleaned, for a holder of `vaults`; a rule that does not clean,
    or names a vault the holder does not reach, is refused (400) with the reason."""
    if not value:
        return NO_PATHS
    found = {}
    for vault, rules in value.items():
        check_vault(vault, FIELD)
        if list(vaults) != [ALL_VAULTS] and vault not in vaults:
            raise InvalidArgumentError(
                FIELD,
                f"rules for vault {vault!r}, which is not among {', '.join(vaults)}; "
                "give rules only for the vaults named",
            )
        try:
            found[vault] = _reach(rules)
        except RuleError as exc:
            raise InvalidArgumentError(FIELD, f"vault {vault!r}: {exc.message}") from None
    return Paths(found)


def only(paths: Paths, vaults: Sequence[str]) -> Paths:
    """The rules of `vaults` (every vault's for `["*"]`)."""
    if list(vaults) == [ALL_VAULTS]:
        return paths
    return Paths({v: r for v, r in paths.vaults.items() if v in vaults})


def one(paths: Paths, vault: str) -> Paths:
    """The rules of one vault, as a Paths (grants and requests are for one vault)."""
    reach = paths.reach(vault)
    return NO_PATHS if reach is None else Paths({vault: reach})


def narrowed(
    inner: Reach | None, outer: Reach | None, vault: str, whose: str, fix: str = "ask for less"
) -> None:
    """Refuse (403) `inner` reaching further than `outer` (`whose` rules) in `vault`."""
    if (why := within(inner, outer)) is not None:
        raise ForbiddenError(f"paths in vault {vault!r} reach further than {whose}: {why}; {fix}")


def narrowest(candidates: Iterable[Reach | None]) -> Reach | None:
    """The one of `candidates` that lies within all the others (None: the whole vault);
    ForbiddenError-free: None when no candidate does (the caller then names rules)."""
    pool = list(candidates)
    for reach in sorted(pool, key=lambda r: r is None):
        if all(within(reach, other) is None for other in pool):
            return reach
    return None


def audit(paths: Paths) -> dict[str, str]:
    """The audit field of an event with rules: `paths` as compact JSON, absent without."""
    rules = stored(paths)
    if rules is None:
        return {}
    return {FIELD: json.dumps(rules, separators=(",", ":"), sort_keys=True, ensure_ascii=False)}


READ_ONLY = frozenset(scope for scope, held in EXPANSION.items() if "write" not in held)


def describe(value: Mapping[str, Any] | None, scope: object = None) -> str:
    """For listings: `team: read projects/acme; write projects/acme/inbox; except …`; for a
    `scope` that cannot write (`read`), the write folders are left out, as they grant
    nothing."""
    paths = loaded(value)
    writes = scope not in READ_ONLY
    return " | ".join(f"{v}: {r.describe(writes=writes)}" for v, r in sorted(paths.vaults.items()))
