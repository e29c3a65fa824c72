"""The node's commits begin with the tool that made them: vault_core is given the tool names
once (vault_node.verbs), and a vault's history shows them."""

from __future__ import annotations

import dataclasses

import pytest

from vault_node.registry import REGISTRY
from vault_node.testing import Harness
from vault_node.verbs import VERBS

NOT_TOOLS = {"import_", "recover"}
"""Commits no tool makes: the first import of a folder, the recovery when a vault opens."""


def test_every_verb_of_a_tool_names_a_registered_tool() -> None:
    named = {f.name: getattr(VERBS, f.name) for f in dataclasses.fields(VERBS)}
    unknown = {
        key: verb for key, verb in named.items() if key not in NOT_TOOLS and verb not in REGISTRY
    }
    assert unknown == {}
    assert {named[key] for key in NOT_TOOLS} == {"vault_import", "vault_recover"}


@pytest.mark.asyncio
async def test_the_history_names_the_tools_that_changed_a_note(node: Harness) -> None:
    await node.ok("note_move", {"path": "wiki/backoff", "to": "wiki/retry"})
    await node.ok("tag_rename", {"from": "ops", "to": "operations", "dry_run": False})
    await node.ok("note_delete", {"path": "wiki/retry"})
    revisions = (await node.ok("note_history", {"path": "wiki/retry"}))["revisions"]
    assert [r["message"] for r in revisions] == [
        "note_delete: wiki/retry.md",
        "tag_rename: #ops -> #operations",
        "note_move: wiki/backoff.md -> wiki/retry.md",
        "vault_import: 6 files already in the folder",
    ]
