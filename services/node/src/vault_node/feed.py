"""What the node knows of the center's keys and revocations, kept current and kept on disk.

The feed polls the center (or re-reads a file) and verifies every snapshot. The snapshot it
holds — the signed text as received — its audit checkpoint and the last JWKS fetched are
written atomically (0600) into the node's state dir, so a node restarted while the center
is down starts from them, verified again, instead of refusing every token.
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import threading
import time
from pathlib import Path

import anyio
import httpx
import structlog
from starlette.concurrency import run_in_threadpool

from tickets import (
    Checkpoint,
    CheckpointError,
    JWKError,
    KeySet,
    RevocationState,
    RollbackError,
    SnapshotError,
    Verifier,
)
from tickets.verify import REFRESH_INTERVAL
from vault_node.config import NodeConfig
from vault_node.errors import ConfigError

log = structlog.get_logger("vault_node")

JWKS_PATH = "/.well-known/jwks.json"
REVOCATIONS_PATH = "/v1/revocations"
FETCH_TIMEOUT = 5.0
SNAPSHOT_FILE = "revocation.jws"
CHECKPOINT_FILE = "checkpoint.json"
JWKS_FILE = "jwks.json"
OUTCOMES = ("ok", "fetch_failed", "refused")
"""How a poll ended: applied (or already held), the center or file could not be read, or
the snapshot was refused (bad signature, rollback, conflict, ...)."""
FIRST_RETRY = 1.0
"""Seconds before the first retry while the node holds no snapshot; doubled each time."""


_PLAIN = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no CA bundle: for http:// it is never used


def http_client(url: str) -> httpx.Client:
    """The client every poll of `url` goes through: its TLS context is made here once, not
    on every poll (loading the CA bundle was 7.5 % of a node's CPU during writes), and a
    plain http:// center loads none. No connection is kept between polls."""
    return httpx.Client(
        timeout=FETCH_TIMEOUT,
        verify=_PLAIN if url.startswith("http://") else True,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def reason_of(exc: BaseException) -> str:
    """A short, content-free word for a failure: never a URL, a body or a secret."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, JWKError):
        return exc.message
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, httpx.TransportError):
        # The system's own word under it ("Connection refused", "Name or service not
        # known"): an operator tells a stopped peer from a name nobody answers.
        cause = exc.__cause__ or exc.__context__
        while cause is not None and not (isinstance(cause, OSError) and cause.strerror):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            return f"{type(exc).__name__} ({cause.strerror})"
    return type(exc).__name__


class StateDir:
    """The node's private folder (0700) of files written whole or not at all (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, name: str) -> str | None:
        """The file's text, or None when there is none (or it cannot be read: logged)."""
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("state_unreadable", file=name, error=reason_of(exc))
            return None

    def write(self, name: str, text: str) -> bool:
        """Replace the file atomically (temp file, fsync, rename); False (logged) on failure."""
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor, temp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                    file.write(text)
                    file.flush()
                    os.fsync(file.fileno())
                Path(temp).replace(self.path / name)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
            _fsync_dir(self.path)
        except OSError as exc:
            log.error("state_write_failed", file=name, error=reason_of(exc))  # noqa: TRY400 — no trace: it may name host paths
            return False
        return True


def _fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class KeySource:
    """Where the trusted public keys come from: a JWKS file, the center, or both; the last
    JWKS fetched from the center is kept in the state dir for a start while it is down."""

    def __init__(self, config: NodeConfig, store: StateDir | None = None) -> None:
        self.file = config.jwks_file
        self.url = f"{config.center_url}{JWKS_PATH}" if config.center_url else ""
        self.store = store
        self._http = http_client(self.url)

    def initial(self) -> KeySet:
        """The key set at start; a file that cannot be read stops the node."""
        if self.file is not None:
            try:
                return _jwks_from_text(self.file.read_text(encoding="utf-8"))
            except (OSError, ValueError, JWKError) as exc:
                raise ConfigError([f"jwks_file {self.file}: {reason_of(exc)}"]) from exc
        return self.refresh() or self._cached() or KeySet()

    def refresh(self) -> KeySet | None:
        """A fresh key set, or None when it cannot be had (the verifier keeps its own)."""
        try:
            if self.url:
                response = self._http.get(self.url)
                response.raise_for_status()
                keys = _jwks_from_text(response.text)
                if self.store is not None:
                    self.store.write(JWKS_FILE, response.text)
                return keys
            if self.file is not None:
                return _jwks_from_text(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError, JWKError, httpx.HTTPError) as exc:
            log.warning("jwks_refresh_failed", error=reason_of(exc))
        return None

    def _cached(self) -> KeySet | None:
        text = self.store.read(JWKS_FILE) if self.store is not None and self.url else None
        if text is None:
            return None
        try:
            keys = _jwks_from_text(text)
        except (ValueError, JWKError) as exc:
            log.warning("jwks_cache_refused", error=reason_of(exc))
            return None
        log.warning("jwks_from_cache", keys=len(keys), hint="the center did not answer at start")
        return keys


def _jwks_from_text(text: str) -> KeySet:
    return KeySet.from_jwks(json.loads(text))


class RevocationFeed:
    """Keeps the node's RevocationState current from a file or the center's feed, and on
    disk. Counts polls by outcome and latches an audit checkpoint rollback for metrics."""

    def __init__(
        self,
        config: NodeConfig,
        state: RevocationState,
        verifier: Verifier,
        keys: KeySource,
        store: StateDir,
    ) -> None:
        self.file = config.revocation_file
        self.url = f"{config.center_url}{REVOCATIONS_PATH}" if config.center_url else ""
        self._http = http_client(self.url)
        self.interval = config.durations.revocation_poll
        self.issuer = config.issuer
        self.state = state
        self.verifier = verifier
        self.keys = keys
        self.store = store
        self.polls = dict.fromkeys(OUTCOMES, 0)
        self.rollbacks = 0
        self._reported: Checkpoint | None = None
        self._saved: Checkpoint | None = None
        self._refreshed: float | None = None
        self._lock = threading.Lock()

    def restore(self) -> bool:
        """Start from the persisted checkpoint and snapshot, each verified again with the
        keys held now; True if a snapshot was restored. A bad file is logged and skipped."""
        if (text := self.store.read(CHECKPOINT_FILE)) is not None:
            try:
                checkpoint = Checkpoint.from_dict(json.loads(text))
                self.state.restore_checkpoint(checkpoint, self.verifier.keys)
                self._saved = checkpoint
            except (ValueError, CheckpointError) as exc:
                log.warning("checkpoint_cache_refused", error=_why(exc))
        token = self.store.read(SNAPSHOT_FILE)
        if token is None:
            return False
        try:
            self.state.accept(token.strip(), self.verifier.keys, issuer=self.issuer)
        except SnapshotError as exc:
            log.warning("revocation_cache_refused", reason=exc.reason)
            return False
        age = self.state.age()
        log.info("revocation_restored", seq=self.state.seq, age_seconds=round(age or 0.0, 1))
        self._check_alarm()
        return True

    def poll_once(self) -> bool:
        """Fetch and apply one snapshot; False (and a log line) when that failed.

        Serialized: the poll loop and a heartbeat that learned of a newer seq may both ask."""
        with self._lock:
            outcome = self._poll()
            self.polls[outcome] += 1
            return outcome == "ok"

    def _poll(self) -> str:
        try:
            token = self._fetch()
        except (OSError, ValueError, httpx.HTTPError) as exc:
            log.warning("revocation_fetch_failed", error=reason_of(exc))
            return "fetch_failed"
        try:
            changed = self._accept(token)
        except RollbackError as exc:
            log.warning(
                "revocation_refused",
                reason=exc.reason,
                held_seq=exc.held_seq,
                offered_seq=exc.offered_seq,
            )
            return "refused"
        except SnapshotError as exc:
            log.warning("revocation_refused", reason=exc.reason)
            return "refused"
        if changed:
            self._persist()
        self._check_alarm()
        return "ok"

    def _fetch(self) -> str:
        if self.url:
            response = self._http.get(self.url)
            response.raise_for_status()
            return _snapshot_token(response.text)
        assert self.file is not None
        return _snapshot_token(self.file.read_text(encoding="utf-8"))

    def _accept(self, token: str) -> bool:
        """Apply a snapshot; one signed by a key the node does not know yet (the center
        rotated) gets one rate-limited JWKS refresh and a second try."""
        try:
            return self.state.accept(token, self.verifier.keys, issuer=self.issuer)
        except SnapshotError as exc:
            if exc.reason != "unknown_kid" or not self._refresh_keys():
                raise
        return self.state.accept(token, self.verifier.keys, issuer=self.issuer)

    def _refresh_keys(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if self._refreshed is not None and now - self._refreshed < REFRESH_INTERVAL:
            return False
        self._refreshed = now
        fresh = self.keys.refresh()
        if fresh is None:
            return False
        self.verifier.keys = fresh
        return True

    def _persist(self) -> None:
        if self.state.token is not None:
            self.store.write(SNAPSHOT_FILE, self.state.token + "\n")
        held = self.state.checkpoint
        if held is None or held == self._saved:
            return
        if self.store.write(CHECKPOINT_FILE, json.dumps(held.to_dict()) + "\n"):
            self._saved = held

    def _check_alarm(self) -> None:
        """Log a new checkpoint rollback once, loudly: seqs only, never a hash."""
        alarm, held = self.state.checkpoint_alarm, self.state.checkpoint
        if alarm is None or alarm == self._reported or held is None:
            return
        self._reported = alarm
        self.rollbacks += 1
        log.error(
            "audit_checkpoint_rollback",
            held_seq=held.seq,
            offered_seq=alarm.seq,
            hint="the center's audit log lost records this node saw: restored or forked?",
        )

    async def run(self) -> None:
        """Poll forever on a fixed cadence (cancelled at shutdown): the time a poll takes
        does not stretch the interval, so a revocation arrives within one of them. While
        the node holds no snapshot (it refuses every token) it asks sooner: after 1 s,
        then 2, 4, … up to the interval, so a center out of reach at start is seen soon
        after it answers."""
        due = time.monotonic()
        retry = FIRST_RETRY
        while True:
            if self.state.snapshot is None and retry < self.interval:
                pause, retry = retry, retry * 2
            else:
                pause = self.interval
            due = max(due + pause, time.monotonic())
            await anyio.sleep(max(0.0, due - time.monotonic()))
            await run_in_threadpool(self.poll_once)


def _why(exc: Exception) -> str:
    return exc.reason if isinstance(exc, CheckpointError) else type(exc).__name__


def _snapshot_token(text: str) -> str:
    """The feed answers the compact JWS itself or `{"snapshot": "<jws>"}`."""
    body = text.strip()
    if body.startswith("{"):
        document = json.loads(body)
        token = document.get("snapshot") if isinstance(document, dict) else None
        if not isinstance(token, str):
            raise ValueError("no snapshot member in the revocation document")
        return token
    return body


def build_verifier(config: NodeConfig) -> tuple[Verifier, RevocationFeed]:
    """The verifier for this node's resource URL and the feed that keeps it current."""
    assert config.state_dir is not None
    store = StateDir(config.state_dir)
    keys = KeySource(config, store)
    state = RevocationState()
    verifier = Verifier(
        keys=keys.initial(),
        issuer=config.issuer,
        audience=config.resource,
        revocation=state,
        refresh=keys.refresh,
        max_stale=config.durations.max_stale,
        read_when_stale=config.read_when_stale,
    )
    return verifier, RevocationFeed(config, state, verifier, keys, store)


def alarm_report(state: RevocationState) -> dict[str, int] | None:
    """The latched checkpoint rollback as `/healthz` shows it (seqs only), or None."""
    alarm, held = state.checkpoint_alarm, state.checkpoint
    if alarm is None or held is None:
        return None
    return {"held_seq": held.seq, "offered_seq": alarm.seq}
