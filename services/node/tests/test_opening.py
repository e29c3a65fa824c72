"""A vault whose first open takes long (the first index of 100,000 notes) holds up neither
the node's start nor any call to another vault: the node listens once its START_WAIT is
over, lists the vault as opening, asks calls to it to retry, and serves it once open."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vault_core import OpenVault, testing
from vault_node import app as app_module
from vault_node.testing import NodeFactory

pytestmark = pytest.mark.asyncio

BIG = {"big.md": "# Big\n\nThe needle is here.\n"}


@pytest.fixture
def held_open(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Opening the vault named `big` waits until the event is set."""
    monkeypatch.setattr(app_module, "START_WAIT", 0.2)
    with testing.held_open("big") as release:
        yield release


async def test_the_node_serves_while_a_vault_is_still_being_opened(
    start_node: NodeFactory, held_open: threading.Event
) -> None:
    node = await start_node(vaults={"big": BIG})
    health = (await node.client.get("/healthz")).json()
    assert (health["vaults"], health["vaults_opening"]) == (2, 1)
    listed = {row["name"]: row for row in (await node.ok("vault_list"))["vaults"]}
    assert listed["big"] == {"name": "big", "is_default": False, "opening": True}
    assert listed["default"]["notes"] > 0
    assert "opening" not in listed["default"]
    code, message = await node.fails("note_search", {"vault": "big", "query": "needle"})
    assert code == "timeout"
    assert "still being opened" in message
    assert "retry" in message
    assert (await node.ok("note_search", {"query": "note"}))["hits"]  # the default vault
    init = await node.rpc(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
    )
    assert "## Vault big\n\nBeing opened" in init["result"]["instructions"]
    listing = await node.rpc("resources/list")
    assert all("//big/" not in r["uri"] for r in listing["result"]["resources"])
    read = await node.rpc("resources/read", {"uri": "secondbrain://big/big.md"})
    assert read["error"]["data"]["code"] == "timeout", read

    held_open.set()
    assert node.app.state.node.library.settle(60.0) == []
    found = await node.ok("note_search", {"vault": "big", "query": "needle"})
    assert [hit["path"] for hit in found["hits"]] == ["big.md"]
    listed = {row["name"]: row for row in (await node.ok("vault_list"))["vaults"]}
    assert listed["big"]["notes"] == 1
    assert "opening" not in listed["big"]
    assert (await node.client.get("/healthz")).json()["vaults_opening"] == 0


async def test_a_vault_that_fails_to_open_at_start_stops_the_start(
    start_node: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(root: Path, name: str, *args: Any, **kwargs: Any) -> OpenVault:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(OpenVault, "open", broken)
    with pytest.raises(OSError, match="Input/output"):
        await start_node()
