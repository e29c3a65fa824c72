"""The revocation feed on the node: the snapshot, its checkpoint and the JWKS kept on disk
and verified again at the next start, rollback refused across restarts, a checkpoint
rollback reported loudly (log, metric, /healthz), a rotated key learned from the feed,
and the feed's age and failures as metrics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import stat
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from tickets import SigningKey, sign_checkpoint, sign_snapshot
from tickets import testing as tt
from vault_node.app import Node, create_app
from vault_node.config import NodeConfig
from vault_node.feed import (
    CHECKPOINT_FILE,
    JWKS_FILE,
    SNAPSHOT_FILE,
    StateDir,
    build_verifier,
    reason_of,
)
from vault_node.testing import PUBLIC_URL, StubCenter, free_port, make_config, mint

pytestmark = pytest.mark.asyncio

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
HEAD, OTHER_HEAD = "ab" * 32, "cd" * 32


@asynccontextmanager
async def running(config: NodeConfig) -> AsyncIterator[tuple[Node, httpx.AsyncClient]]:
    """A node app with its lifespan entered, and a client for it."""
    app = create_app(config)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
            yield app.state.node, client


async def ping(client: httpx.AsyncClient, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return (await client.post("/mcp", json=PING, headers=headers)).status_code


def publish(config: NodeConfig, key: SigningKey, seq: int, **fields: Any) -> str:
    """Put a snapshot signed by `key` where the node polls it; returns the signed text."""
    token = sign_snapshot(tt.snapshot(seq, iat=int(time.time()), **fields), key)
    assert config.revocation_file is not None
    config.revocation_file.write_text(token)
    return token


@pytest.fixture
def key() -> SigningKey:
    return tt.throwaway_key()


@pytest.fixture
def config(tmp_path: Path, key: SigningKey) -> NodeConfig:
    made = make_config(tmp_path, key, revocation_poll="1h")
    (made.data_dir / "default").mkdir(parents=True)
    return made


def state_files(config: NodeConfig) -> Path:
    assert config.state_dir is not None
    return config.state_dir


async def test_the_snapshot_is_kept_as_signed_0600_in_a_0700_state_dir(
    config: NodeConfig, key: SigningKey
) -> None:
    async with running(config) as (node, _):
        token = publish(config, key, 2, tokens={"j1": 2**40})
        assert node.feed is not None
        assert node.feed.poll_once()
    folder = state_files(config)
    assert folder == config.data_dir / ".node"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    kept = folder / SNAPSHOT_FILE
    assert kept.read_text().strip() == token
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == [SNAPSHOT_FILE]  # no temp file left


async def test_a_restart_without_a_source_starts_from_the_kept_snapshot(
    config: NodeConfig, key: SigningKey
) -> None:
    async with running(config) as (node, _):
        publish(config, key, 3, tokens={"revoked-jti": 2**40})
        assert node.feed is not None
        assert node.feed.poll_once()
    assert config.revocation_file is not None
    config.revocation_file.write_text("the center is gone")
    with capture_logs() as logs:
        async with running(config) as (node, client):
            assert node.verifier.revocation.seq == 3
            assert await ping(client, mint(key)) == 200
            assert await ping(client, mint(key, jti="revoked-jti")) == 401
            health = (await client.get("/healthz")).json()
    assert health["revocation_seq"] == 3
    assert health["revocation_age_seconds"] is not None
    events = [entry["event"] for entry in logs]
    assert "revocation_restored" in events
    assert "revocation_fetch_failed" not in events  # a file that is not a JWS is refused
    assert "revocation_unavailable" not in events


async def test_a_rollback_below_the_kept_seq_is_refused_after_a_restart(
    config: NodeConfig, key: SigningKey
) -> None:
    async with running(config) as (node, _):
        publish(config, key, 7, tokens={"revoked-jti": 2**40})
        assert node.feed is not None
        assert node.feed.poll_once()
    publish(config, key, 2)  # an older snapshot, e.g. from a restored backup
    with capture_logs() as logs:
        async with running(config) as (node, client):
            assert node.verifier.revocation.seq == 7
            assert await ping(client, mint(key, jti="revoked-jti")) == 401
            assert node.feed is not None
            assert node.feed.polls["refused"] == 1
    refused = [entry for entry in logs if entry["event"] == "revocation_refused"]
    assert refused
    assert (refused[0]["reason"], refused[0]["held_seq"], refused[0]["offered_seq"]) == (
        "rollback",
        7,
        2,
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:-3] + ("A" if text[-3] != "A" else "B") + text[-2:],
        lambda text: "not a snapshot",
        lambda text: "",
    ],
    ids=["bad-signature", "garbage", "empty"],
)
async def test_a_damaged_kept_snapshot_is_refused_at_start_and_every_token_with_it(
    config: NodeConfig, key: SigningKey, damage: Any
) -> None:
    async with running(config) as (node, _):
        assert node.feed is not None
        assert node.feed.poll_once()
    kept = state_files(config) / SNAPSHOT_FILE
    kept.write_text(damage(kept.read_text().strip()))
    assert config.revocation_file is not None
    config.revocation_file.write_text("the center is gone")
    with capture_logs() as logs:
        async with running(config) as (node, client):
            assert node.verifier.revocation.snapshot is None
            assert await ping(client, mint(key)) == 401
    events = [entry["event"] for entry in logs]
    assert "revocation_cache_refused" in events
    assert "revocation_unavailable" in events


async def test_a_snapshot_signed_by_an_untrusted_key_is_not_restored(
    config: NodeConfig, key: SigningKey
) -> None:
    folder = state_files(config)
    folder.mkdir(mode=0o700)
    foreign = sign_snapshot(tt.snapshot(99, iat=int(time.time())), tt.throwaway_key())
    (folder / SNAPSHOT_FILE).write_text(foreign)
    async with running(config) as (node, _):
        assert node.verifier.revocation.seq == 1  # the feed's own, not the planted 99


async def test_a_checkpoint_rollback_is_loud_in_the_log_the_metrics_and_healthz(
    tmp_path: Path, key: SigningKey
) -> None:
    config = make_config(tmp_path, key, revocation_poll="1h", metrics=True)
    (config.data_dir / "default").mkdir(parents=True)
    publish(config, key, 1, checkpoint=sign_checkpoint(key, 40, HEAD))
    async with running(config):
        pass
    saved = json.loads((state_files(config) / CHECKPOINT_FILE).read_text())
    assert (saved["seq"], saved["hash"]) == (40, HEAD)
    publish(config, key, 2, checkpoint=sign_checkpoint(key, 31, OTHER_HEAD))
    with capture_logs() as logs:
        async with running(config) as (node, client):
            health = (await client.get("/healthz")).json()
            scraped = (await client.get("/metrics")).text
            assert node.feed is not None
            assert node.feed.poll_once()  # the same offence again: one log line, one count
    alarms = [entry for entry in logs if entry["event"] == "audit_checkpoint_rollback"]
    assert len(alarms) == 1
    assert alarms[0]["log_level"] == "error"
    assert (alarms[0]["held_seq"], alarms[0]["offered_seq"]) == (40, 31)
    assert HEAD not in json.dumps(logs)
    assert OTHER_HEAD not in json.dumps(logs)
    assert health["status"] == "ok"
    assert health["audit_checkpoint_seq"] == 40
    assert health["audit_checkpoint_rollback"] == {"held_seq": 40, "offered_seq": 31}
    assert health["revocation_seq"] == 2  # the revocations still apply
    assert "secondbrain_audit_checkpoint_rollback 1.0" in scraped
    assert "secondbrain_audit_checkpoint_rollbacks_total 1.0" in scraped
    assert "secondbrain_audit_checkpoint_seq 40.0" in scraped


async def test_a_forged_kept_checkpoint_is_dropped(config: NodeConfig, key: SigningKey) -> None:
    folder = state_files(config)
    folder.mkdir(mode=0o700)
    forged = {**sign_checkpoint(key, 40, HEAD).to_dict(), "seq": 41}
    (folder / CHECKPOINT_FILE).write_text(json.dumps(forged))
    with capture_logs() as logs:
        async with running(config) as (node, _):
            assert node.verifier.revocation.checkpoint is None
    refused = [entry for entry in logs if entry["event"] == "checkpoint_cache_refused"]
    assert [entry["error"] for entry in refused] == ["bad_signature"]


async def test_the_feed_age_seq_and_failed_polls_are_metrics(
    tmp_path: Path, key: SigningKey
) -> None:
    config = make_config(tmp_path, key, revocation_poll="1h", metrics=True)
    (config.data_dir / "default").mkdir(parents=True)
    async with running(config) as (node, client):
        assert config.revocation_file is not None
        config.revocation_file.unlink()
        assert node.feed is not None
        assert not node.feed.poll_once()
        publish(config, tt.throwaway_key(), 5)
        assert not node.feed.poll_once()
        scraped = (await client.get("/metrics")).text
    assert 'secondbrain_revocation_polls_total{outcome="ok"} 1.0' in scraped
    assert 'secondbrain_revocation_polls_total{outcome="fetch_failed"} 1.0' in scraped
    assert 'secondbrain_revocation_polls_total{outcome="refused"} 1.0' in scraped
    assert "secondbrain_revocation_seq 1.0" in scraped
    age = next(
        line for line in scraped.splitlines() if line.startswith("secondbrain_revocation_age")
    )
    assert 0 <= float(age.split()[1]) < 3600
    assert "secondbrain_audit_checkpoint_rollback 0.0" in scraped
    assert "secondbrain_heartbeats_total" not in scraped  # no center to report to


async def test_a_snapshot_from_a_rotated_key_fetches_the_keys_once(
    config: NodeConfig, key: SigningKey
) -> None:
    rotated = tt.throwaway_key()
    async with running(config) as (node, client):
        assert config.jwks_file is not None
        config.jwks_file.write_text(json.dumps(tt.key_set(key, rotated).to_jwks()))
        publish(config, rotated, 2)
        assert node.feed is not None
        assert node.feed.poll_once()
        assert node.verifier.revocation.signed_by == rotated.kid
        assert await ping(client, mint(rotated)) == 200
        assert await ping(client, mint(key)) == 200  # the old key keeps working
        unknown = tt.throwaway_key()
        config.jwks_file.write_text(json.dumps(tt.key_set(key, rotated, unknown).to_jwks()))
        publish(config, unknown, 3)
        assert not node.feed.poll_once()  # a second refresh within 30 s is not allowed
        assert node.verifier.revocation.seq == 2


async def test_a_revoked_kid_in_the_snapshot_is_refused_at_once(
    config: NodeConfig, key: SigningKey
) -> None:
    retired = tt.throwaway_key()
    assert config.jwks_file is not None
    config.jwks_file.write_text(json.dumps(tt.key_set(key, retired).to_jwks()))
    async with running(config) as (node, client):
        token = mint(retired)
        assert await ping(client, token) == 200
        publish(config, key, 2, revoked_kids=frozenset({retired.kid}))
        assert node.feed is not None
        assert node.feed.poll_once()
        assert await ping(client, token) == 401
        assert await ping(client, mint(key)) == 200


async def test_concurrent_polls_all_succeed_and_are_all_counted(
    config: NodeConfig, key: SigningKey
) -> None:
    async with running(config) as (node, _):
        publish(config, key, 2, tokens={"j1": 2**40})
        feed = node.feed
        assert feed is not None
        results: list[bool] = []

        def poll() -> None:
            results.extend(feed.poll_once() for _ in range(10))

        threads = [threading.Thread(target=poll) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results.count(True) == 80
    assert feed.polls == {"ok": 81, "fetch_failed": 0, "refused": 0}  # with the one at start
    assert node.verifier.revocation.seq == 2


async def test_a_state_write_that_fails_is_logged_without_a_path(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state dir should be")
    with capture_logs() as logs:
        assert not StateDir(blocked / "state").write(SNAPSHOT_FILE, "x")
    assert [entry["event"] for entry in logs] == ["state_write_failed"]
    assert str(tmp_path) not in json.dumps(logs)


@pytest.fixture
def center() -> Iterator[StubCenter]:
    running_center = StubCenter(tt.throwaway_key(), tt.snapshot(4))
    yield running_center
    running_center.close()


async def test_a_restart_while_the_center_is_down_uses_the_kept_jwks_too(
    tmp_path: Path, key: SigningKey, center: StubCenter
) -> None:
    config = make_config(
        tmp_path,
        key,
        center_url=center.url,
        jwks_file=None,
        revocation_file=None,
        revocation_poll="1h",
    )
    (config.data_dir / "default").mkdir(parents=True)
    async with running(config) as (_, client):
        assert await ping(client, mint(center.key)) == 200
    assert (state_files(config) / JWKS_FILE).exists()
    center.up = False
    with capture_logs() as logs:
        async with running(config) as (node, client):
            assert node.verifier.revocation.seq == 4
            assert await ping(client, mint(center.key)) == 200
    events = [entry["event"] for entry in logs]
    assert "jwks_from_cache" in events
    assert "revocation_restored" in events


async def test_the_poll_loop_survives_polls_slower_than_its_interval(
    config: NodeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(config) as (node, _):
        feed = node.feed
        assert feed is not None
        polls: list[float] = []

        def slow_poll() -> bool:
            time.sleep(0.05)  # longer than the interval: the next one is overdue
            polls.append(time.monotonic())
            return True

        monkeypatch.setattr(feed, "poll_once", slow_poll)
        feed.interval = 0.01
        loop = asyncio.create_task(feed.run())
        deadline = time.monotonic() + 60
        while len(polls) < 4 and time.monotonic() < deadline and not loop.done():
            await asyncio.sleep(0.01)
        assert not loop.done(), loop.exception()
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert len(polls) >= 4


async def test_a_node_started_without_a_snapshot_asks_again_soon(
    config: NodeConfig, key: SigningKey
) -> None:
    """The first poll finds nothing, so every token is refused; the loop does not wait
    its hour-long interval but asks again within seconds and then serves the token."""
    assert config.revocation_file is not None
    config.revocation_file.unlink()  # the center has not answered yet
    async with running(config) as (node, client):
        assert node.feed is not None
        assert node.feed.polls["fetch_failed"] == 1
        token = mint(key)
        assert await ping(client, token) == 401
        publish(config, key, seq=1)
        deadline = time.monotonic() + 60
        while await ping(client, token) != 200:
            assert time.monotonic() < deadline, node.feed.polls
            await asyncio.sleep(0.1)
        assert node.feed.polls["ok"] == 1


async def test_polls_make_no_tls_context_and_an_https_center_gets_one_per_client(
    tmp_path: Path, key: SigningKey, center: StubCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append("context")
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    plain = make_config(tmp_path, key, center_url=center.url, jwks_file=None, revocation_file=None)
    verifier, feed = build_verifier(plain)
    assert all(feed.poll_once() for _ in range(5))
    assert verifier.revocation.seq == 4
    assert made == []  # an http:// center: no CA bundle loaded, ever
    secure = make_config(
        tmp_path, key, center_url="https://127.0.0.1:9", jwks_file=None, revocation_file=None
    )
    _, feed = build_verifier(secure)
    before = len(made)
    assert not any(feed.poll_once() for _ in range(5))  # nothing listens there
    assert len(made) == before
    assert before <= 2  # one for the key source's client, one for the feed's


async def test_a_failure_to_reach_a_peer_names_the_systems_reason_and_nothing_else() -> None:
    """`reason_of` is what every "…_failed" log line says: a refused connection and a name
    nobody answers read differently, and neither names the URL."""
    reasons = []
    for url in (f"http://127.0.0.1:{free_port()}/v1/nodes/leases", "http://no-such.invalid/"):
        with pytest.raises(httpx.ConnectError) as caught:
            httpx.post(url, timeout=5)
        reasons.append(reason_of(caught.value))
    refused, unknown = reasons
    assert refused == "ConnectError (Connection refused)"
    assert unknown.startswith("ConnectError (")
    assert unknown != refused
    assert not any("127.0.0.1" in r or "invalid" in r or "leases" in r for r in reasons)
    assert reason_of(httpx.ReadTimeout("timed out")) == "ReadTimeout"
