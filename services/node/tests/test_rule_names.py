"""The center cleans path rules (`tickets.reach`) apart from the node's paths
(`vault_core.paths`): the two must refuse the same characters in a name, or a rule could
name a folder no note may have, or refuse one that notes do."""

from __future__ import annotations

import pytest

from tickets.reach import RuleError, folder
from vault_core import paths
from vault_core.errors import InvalidPathError


def refused_by_rules(name: str) -> bool:
    try:
        folder(name)
    except RuleError:
        return True
    return False


def refused_by_paths(name: str) -> bool:
    try:
        paths.clean(name)
    except InvalidPathError:
        return True
    return False


@pytest.mark.parametrize("start", range(0, 0x30000, 0x4000))
def test_rules_and_paths_refuse_the_same_characters_in_a_name(start: int) -> None:
    names = [f"a{chr(point)}b" for point in range(start, start + 0x4000)]
    differ = [n for n in names if refused_by_rules(n) != refused_by_paths(n)]
    assert differ == []
    if start == 0:  # the block holding C0, DEL and C1: some are refused, most are not
        assert 0 < sum(map(refused_by_paths, names)) < len(names)
