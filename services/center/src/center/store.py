"""One way to read and one way to change authorization state, so audit never drifts.

Every change runs in `Store.change()`: serialized in the process (and, on PostgreSQL,
across processes by the audit head's row lock), domain writes flushed, audit records
appended, then one commit. If the audit file's append fails, or the commit fails after
it, the store locks itself (`restart_required`): changes answer 503 until a restart, reads
go on. The audit table commits with the change or not at all, so there a failure is a
503 to retry, and the store works again as soon as the database does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from center.audit import AuditLog, Event, Head, Selection, Value
from center.errors import ConflictError, RestartRequiredError, StorageError

Clock = Callable[[], float]
READY_TIMEOUT = 2.0
LOST = (SQLAlchemyError, OSError)
"""A database that failed or went away: a driver that cannot connect raises OSError."""


@dataclass
class Change:
    """The unit of work handed to domain code: a session in a transaction, the time the
    change happens at, and the audit events it will append."""

    session: AsyncSession
    now: int
    events: list[Event] = field(default_factory=list)
    channel: str | None = None
    """Where the change was asked for besides the API (`console`); every record says so."""

    def record(self, action: str, **fields: Value) -> None:
        """Queue an audit record; a field no record may hold is refused right here."""
        if self.channel is not None:
            fields["channel"] = self.channel
        self.events.append(Event.of(action, **fields))

    def record_node(self, action: str, node: str, **fields: Value) -> None:
        """Queue an audit record about a node, which is its subject and its object."""
        self.record(action, subject=node, object=f"node:{node}", **fields)


class Store:
    """The database sessions, the audit log and the lock state of one center process."""

    def __init__(self, engine: AsyncEngine, audit: AuditLog, clock: Clock) -> None:
        self.engine = engine
        self.audit = audit
        self.clock = clock
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)
        self.locked: str | None = None
        self._lock = asyncio.Lock()

    def now(self) -> int:
        return int(self.clock())

    async def start(self) -> None:
        """Verify the audit chain (AuditChainError refuses to start)."""
        await self.audit.start(self.sessions)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only session; database failures become StorageError (503)."""
        try:
            async with self.sessions() as session:
                yield session
        except LOST as exc:
            raise StorageError(type(exc).__name__) from None

    @asynccontextmanager
    async def change(self, channel: str | None = None) -> AsyncIterator[Change]:
        """Run one serialized, audited change; see the module docstring. `channel` marks
        every record it appends (the console's changes say `console`)."""
        self._refuse_if_locked()
        async with self._lock:
            self._refuse_if_locked()
            appended = False
            try:
                async with self.sessions() as session, session.begin():
                    await self.audit.lock(session)
                    work = Change(session, self.now(), channel=channel)
                    yield work
                    await session.flush()
                    appended = bool(work.events)
                    await self.audit.append(session, work.events, self.clock())
            except RestartRequiredError as exc:
                self.locked = exc.reason
                raise
            except LOST as exc:
                raise self._failed(exc, appended=appended) from None

    @asynccontextmanager
    async def serialized(self) -> AsyncIterator[AsyncSession]:
        """A write transaction outside the audit (the revocation feed's bookkeeping):
        serialized like a change, but not refused while changes are locked."""
        async with self._lock:
            try:
                async with self.sessions() as session, session.begin():
                    yield session
            except LOST as exc:
                raise StorageError(type(exc).__name__) from None

    def _failed(self, exc: Exception, *, appended: bool) -> Exception:
        if appended and not self.audit.atomic:
            self.locked = f"commit failed after the audit append ({type(exc).__name__})"
            return RestartRequiredError(self.locked)
        if isinstance(exc, IntegrityError):
            return ConflictError("the change collided with a concurrent one; retry it")
        return StorageError(type(exc).__name__)

    def _refuse_if_locked(self) -> None:
        if self.locked is not None:
            raise RestartRequiredError(self.locked)

    async def ready(self) -> str | None:
        """Why this process cannot serve now (None: it can): its changes are locked, or
        the database does not answer within `READY_TIMEOUT` seconds."""
        if self.locked is not None:
            return f"restart_required: {self.locked}"
        try:
            async with asyncio.timeout(READY_TIMEOUT), self.sessions() as session:
                await session.execute(text("SELECT 1"))
        except (*LOST, TimeoutError) as exc:
            return f"database: {type(exc).__name__}"
        return None

    async def audit_head(self) -> Head:
        async with self.read() as session:
            return await self.audit.head(session)

    async def audit_export(self, selection: Selection) -> list[str]:
        async with self.read() as session:
            return await self.audit.export(session, selection)

    async def close(self) -> None:
        self.audit.close()
        await self.engine.dispose()
