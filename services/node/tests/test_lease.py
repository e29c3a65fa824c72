"""Lease keeping without a network: which writes a node may acknowledge, on a clock the
test moves, over a real library of vaults."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickets import testing as tt
from vault_core import Library, Settings, copies
from vault_node import lease as lease_module
from vault_node.config import NodeConfig
from vault_node.errors import FailingOverError, NotPrimaryError
from vault_node.lease import Leases
from vault_node.shipping import Replicator
from vault_node.testing import make_config, write_files


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    write_files(tmp_path / "data" / "notes", {"a.md": "# A\n"})
    opened = Library(tmp_path / "data", Settings(watch=False)).open_all()
    yield opened
    opened.close()


@pytest.fixture
def config(tmp_path: Path) -> NodeConfig:
    return make_config(tmp_path, tt.throwaway_key(), lease_margin="2s")


def _leases(config: NodeConfig, library: Library, clock: Clock) -> Leases:
    return Leases(lambda: config, lambda: library, clock)


REPLICA_B = {
    "node": "node-b",
    "resource": "https://node-b.test/mcp",
    "in_sync": True,
    "lease": None,
}


def _answer(
    role: str,
    epoch: int = 3,
    ttl: int = 10,
    replicas: tuple[dict[str, Any], ...] = (REPLICA_B,),
    expires: int | None = None,
) -> dict[str, Any]:
    return {
        "ttl": ttl,
        "renew": 3,
        "vaults": [
            {
                "vault": "notes", "role": role, "epoch": epoch, "mode": "sync", "expires": expires,
                "primary": {"node": "node-a", "resource": "https://node-a.test/mcp"},
                "replicas": list(replicas),
            }
        ],
    }  # fmt: skip


def test_a_vault_nobody_replicates_is_never_gated(config: NodeConfig, library: Library) -> None:
    assert _leases(config, library, Clock()).check_write("notes") is None


def test_a_primary_acknowledges_until_the_renewal_was_sent_plus_ttl_minus_the_margin(
    config: NodeConfig, library: Library
) -> None:
    clock = Clock()
    leases = _leases(config, library, clock)
    sent = clock.now
    clock.now += 1.5  # the renewal's round trip: it counts against the lease
    leases.apply(_answer("primary"), sent)
    clock.now = sent + 10 - 2 - 0.001
    held = leases.check_write("notes")
    assert held is not None
    assert held.epoch == 3
    clock.now = sent + 10 - 2
    with pytest.raises(FailingOverError) as refused:
        leases.check_write("notes")
    assert "retry in 3 s" in refused.value.message


def test_a_renewal_that_does_not_extend_the_lease_does_not_move_the_deadline(
    config: NodeConfig, library: Library
) -> None:
    # While a move lets the primary's lease run out, the center answers its renewals with
    # the same expiry: counting from each renewal, the primary wrote past the lease and
    # its pushes (leases expired) were refused, so the move never completed.
    clock = Clock()
    leases = _leases(config, library, clock)
    first = clock.now
    leases.apply(_answer("primary", expires=1_000_000), first)
    clock.now += 5
    leases.apply(_answer("primary", expires=1_000_000), clock.now)
    clock.now = first + 10 - 2
    with pytest.raises(FailingOverError):
        leases.check_write("notes")
    leases.apply(_answer("primary", expires=1_008_000), clock.now)  # extended again
    assert leases.check_write("notes") is not None


def test_a_primary_without_replicas_goes_on_writing_past_its_lease(
    config: NodeConfig, library: Library
) -> None:
    clock = Clock()
    leases = _leases(config, library, clock)
    leases.apply(_answer("primary", replicas=()), clock.now)
    clock.now += 3600  # the center out of reach for an hour: nobody can take over
    held = leases.check_write("notes")
    assert held is not None
    assert held.replicas == ()


def test_a_failed_renewal_changes_nothing_so_writes_stop_on_time(
    config: NodeConfig, library: Library
) -> None:
    clock = Clock()
    leases = _leases(config, library, clock)
    leases.apply(_answer("primary"), clock.now)
    broken = config.model_copy(update={"center_url": "http://127.0.0.1:9"})
    leases.config = lambda: broken
    assert not leases.renew_once()
    clock.now += 8
    with pytest.raises(FailingOverError):
        leases.check_write("notes")


def test_a_replica_refuses_writes_naming_its_primary(config: NodeConfig, library: Library) -> None:
    leases = _leases(config, library, Clock())
    leases.apply(_answer("replica"), 0.0)
    with pytest.raises(NotPrimaryError) as refused:
        leases.check_write("notes")
    assert "node node-a (https://node-a.test/mcp)" in refused.value.message


def test_role_and_epoch_survive_a_restart_and_gate_until_renewed(
    config: NodeConfig, library: Library
) -> None:
    clock = Clock()
    _leases(config, library, clock).apply(_answer("primary", epoch=7), clock.now)
    root = library.get("notes").vault.root
    assert copies.load(root) == copies.CopyState("primary", 7, "node-a", head_epoch=7)
    restarted = _leases(config, library, clock)
    with pytest.raises(FailingOverError):
        restarted.check_write("notes")


def test_a_primary_copy_the_center_dropped_is_kept_as_a_replica(
    config: NodeConfig, library: Library
) -> None:
    # A move drops the old primary's copy: its disk still said primary, so the node
    # answered every call for the vault itself (failing_over for each write, stale reads)
    # instead of passing it to the new primary.
    clock = Clock()
    leases = _leases(config, library, clock)
    leases.apply(_answer("primary", epoch=7), clock.now, {"notes"})
    leases.apply({"ttl": 10, "renew": 3, "vaults": []}, clock.now, {"notes"})
    root = library.get("notes").vault.root
    assert copies.load(root) == copies.CopyState("replica", 7, "", head_epoch=7)
    with pytest.raises(NotPrimaryError):
        leases.check_write("notes")
    assert [held.vault for held in leases.primaries()] == []


def test_an_answer_with_an_older_epoch_than_the_one_saved_is_not_saved(
    config: NodeConfig, library: Library
) -> None:
    leases = _leases(config, library, Clock())
    leases.apply(_answer("replica", epoch=9), 0.0)
    leases.apply(_answer("primary", epoch=8), 0.0)
    assert copies.load(library.get("notes").vault.root).epoch == 9
    with pytest.raises(NotPrimaryError):
        leases.check_write("notes")


@pytest.mark.parametrize(
    "answer",
    [{"ttl": 0, "vaults": []}, {"ttl": 10}, {"ttl": "ten", "vaults": []}, {"vaults": []}],
)
def test_an_unreadable_answer_is_refused(
    config: NodeConfig, library: Library, answer: dict[str, Any]
) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        _leases(config, library, Clock()).apply(answer, 0.0)


def test_a_primary_vouches_only_for_replicas_whose_head_it_learnt_at_this_epoch(
    config: NodeConfig, library: Library
) -> None:
    """The renewal's `caught_up`: a replica whose head a push answered at the current
    epoch; none after the epoch changed (another copy's history may have replaced its
    head meanwhile), none after a failed push, and none for a replica copy."""
    leases = _leases(config, library, Clock())
    replicator = Replicator(leases, lambda: config)
    leases.holding = replicator.holding
    try:
        leases.apply(_answer("primary", epoch=3), sent=1000.0)
        assert leases.body()["copies"][0]["caught_up"] == [], "no push answered yet"
        replicator._at_epoch("notes", 3)
        replicator._heads[("notes", "node-b")] = "1" * 40  # as a push's 200 sets it
        assert leases.body()["copies"][0]["caught_up"] == ["node-b"]
        replicator._heads.pop(("notes", "node-b"))  # as a failed push does
        assert leases.body()["copies"][0]["caught_up"] == []
        replicator._heads[("notes", "node-b")] = "1" * 40
        leases.apply(_answer("primary", epoch=4), sent=1000.0)
        assert leases.body()["copies"][0]["caught_up"] == [], "learnt at epoch 3"
        replicator._at_epoch("notes", 4)  # the first shipment at epoch 4 forgets it
        assert ("notes", "node-b") not in replicator._heads
        leases.apply(_answer("replica", epoch=5), sent=1000.0)
        assert "caught_up" not in leases.body()["copies"][0]
    finally:
        replicator.close()


@pytest.mark.asyncio
async def test_a_failed_renewal_is_tried_again_sooner_doubling_up_to_the_interval(
    config: NodeConfig, library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a 10 s lease renewed every 3 s, two failures in a row at the interval's pace
    (a center stopping, its name still answered for a moment) used most of the lease."""
    leases = _leases(config, library, Clock())
    outcomes = iter([False, False, False, False, True, False, True])
    waits: list[float] = []

    def renew_once() -> bool:
        return next(outcomes)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 7:
            raise asyncio.CancelledError

    monkeypatch.setattr(leases, "renew_once", renew_once)
    monkeypatch.setattr(lease_module.anyio, "sleep", sleep)
    with pytest.raises(asyncio.CancelledError):
        await leases.run()
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0, 0.5, 3.0]
