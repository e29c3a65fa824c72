"""Everything one running center holds, opened in order and closed together.

Start-up refuses rather than guesses: the data directory is made private, one process
owns it (an exclusive lock, since `audit.jsonl` has a single writer), the schema is
migrated, the audit chain verified and the signing key recorded before any request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from center import grants, requests, throttles, tokens
from center.audit import AuditLog, JsonlAudit, TableAudit
from center.auth import Authenticator
from center.config import Settings
from center.db import make_engine, migrate, private_dir
from center.db.probe import describe
from center.errors import CenterError, ConfigError, DatabaseUnusableError, StorageError
from center.keyring import Keyring
from center.log import get_logger
from center.passwords import Passwords
from center.store import Clock, Store
from tickets import lock

PRUNE_EVERY = 60.0
CENTER_LOCK = "center.lock"


@dataclass
class Center:
    """The parts routes use: settings, store, keys, authentication and password hashing."""

    settings: Settings
    store: Store
    keyring: Keyring
    auth: Authenticator
    passwords: Passwords
    started: float
    draining: bool = False
    """Set at SIGTERM when `shutdown_drain` is on: /readyz answers 503, requests still run."""


@contextmanager
def exclusive(data_dir: Path) -> Iterator[None]:
    """Hold `data_dir/center.lock` for the life of the process (SQLite deployments); a
    second center is refused with the first one's pid."""
    try:
        with lock.exclusive(data_dir, CENTER_LOCK, "secondbrain-center serve"):
            yield
    except lock.DataDirBusyError as exc:
        raise ConfigError([f"data_dir: {exc}"]) from None


def audit_for(settings: Settings) -> AuditLog:
    if settings.backend == "postgresql":
        return TableAudit()
    return JsonlAudit(settings.data_dir / "audit.jsonl")


@asynccontextmanager
async def open_center(
    settings: Settings, *, clock: Clock = time.time, passwords: Passwords | None = None
) -> AsyncIterator[Center]:
    """Open a center on `settings`; ConfigError, StorageError or AuditChainError refuse."""
    private_dir(settings.data_dir)
    with exclusive(settings.data_dir) if settings.backend == "sqlite" else _nothing():
        store = Store(make_engine(settings), audit_for(settings), clock)
        try:
            await _start(store)
            await recover(store)
            keyring = Keyring(settings.signing_key(), settings.mcp_url)
            await keyring.start(store)
            auth = Authenticator(store, settings.admin_token_value())
            center = Center(settings, store, keyring, auth, passwords or Passwords(), clock())
            await prune_once(center)
            yield center
        finally:
            await store.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


async def migrate_database(settings: Settings) -> tuple[str | None, str]:
    """`secondbrain-center migrate`: the schema's revision before and after `migrate`. A
    SQLite center must not be running meanwhile (its data dir lock says so)."""
    private_dir(settings.data_dir)
    with exclusive(settings.data_dir) if settings.backend == "sqlite" else _nothing():
        engine = make_engine(settings)
        try:
            return await migrate(engine)
        except (SQLAlchemyError, OSError) as exc:
            if settings.backend == "postgresql":
                raise DatabaseUnusableError(describe(engine.url, exc)) from None
            raise StorageError(f"cannot migrate the database: {type(exc).__name__}") from None
        finally:
            await engine.dispose()


async def _start(store: Store) -> None:
    try:
        # One SQLite process (it holds the data dir's lock) migrates itself; centers on
        # PostgreSQL leave that to `secondbrain-center migrate`, run once before them.
        await migrate(store.engine, upgrade=store.engine.dialect.name == "sqlite")
    except (SQLAlchemyError, OSError) as exc:
        if store.engine.dialect.name == "postgresql":
            raise DatabaseUnusableError(describe(store.engine.url, exc)) from None
        raise StorageError(f"cannot open the database: {type(exc).__name__}") from None
    try:
        await store.start()
    except (OSError, SQLAlchemyError) as exc:
        raise StorageError(f"cannot open the audit log: {type(exc).__name__}") from None


async def recover(store: Store) -> None:
    """After a crash between an audit fsync and its commit: apply the lost request
    decisions (so none can be replayed) and name the records in `audit.recover`."""
    records = store.audit.uncommitted
    if not records:
        return
    first, last = records[0]["seq"], records[-1]["seq"]
    get_logger().warning("audit_uncommitted", first_seq=first, last_seq=last)
    async with store.change() as work:
        restored = await requests.reconcile(work, records)
        reason = f"records {first}-{last} describe a change that was never committed"
        work.record("audit.recover", actor="system", reason=reason, object=_objects(restored))
    store.audit.uncommitted = []


def _objects(request_ids: list[str]) -> str | None:
    return ",".join(f"request:{i}" for i in request_ids)[:1000] or None


async def prune_once(center: Center) -> None:
    """Forget grants, tokens and limits that expired; a no-op while changes are locked."""
    async with center.store.change() as work:
        await grants.prune(work.session, work.now)
        await tokens.prune(work.session, work.now)
        await throttles.prune(work.session, work.now)


async def prune_forever(center: Center, every: float = PRUNE_EVERY) -> None:
    """Prune every minute for the life of the app; failures are logged, never fatal."""
    log = get_logger()
    while True:
        await asyncio.sleep(every)
        try:
            await prune_once(center)
        except CenterError as exc:
            log.warning("prune_skipped", code=exc.code)
