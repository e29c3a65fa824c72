"""The append-only, hash-chained audit log of every authorization change (docs/design.md#audit-log).

Two stores, one chain format (`tickets.audit`): on SQLite deployments `DIR/audit.jsonl`,
opened for append, 0600, one fsync per record; on PostgreSQL the `audit` table, whose
appends serialize on a row lock of `audit_head` inside the change's own transaction. The
chain is verified at start and before every export; a failed append raises
RestartRequiredError, which locks the center.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from center.db import AuditHead, AuditRecord, private_file
from center.errors import (
    AuditChainError,
    InvalidArgumentError,
    RestartRequiredError,
    StorageError,
)
from tickets import GENESIS_HASH, ChainVerifier, Checkpoint, RecordError, make_record, to_line
from tickets.audit import timestamp

Head = tuple[int, str] | None
Value = str | int | None
RECENT = 4096
"""Hashes of this many newest records stay in memory for node checkpoint checks."""


@dataclass(frozen=True)
class Event:
    """One audit record to be: its action and fields (validated when created)."""

    action: str
    fields: Mapping[str, Value] = field(default_factory=dict)

    @classmethod
    def of(cls, action: str, **fields: Value) -> Event:
        """Refuse now (InvalidArgumentError) what `make_record` would refuse at append."""
        try:
            make_record(None, action=action, ts="-", **fields)
        except RecordError as exc:
            raise InvalidArgumentError(exc.field, exc.problem) from None
        return cls(action, fields)


@dataclass(frozen=True)
class Selection:
    """Which records an export returns: one vault (None: all) and a seq range, and
    optionally one actor, one action (or family: `grant` is every `grant.*`) and a time
    range (`ts` from `after` inclusive to `before` exclusive, in the records' own form)."""

    vault: str | None = None
    since: int = 1
    until: int | None = None
    vaulted_only: bool = False
    """Leave out global records (vault null): for members, who see vaults, not the center."""
    actor: str | None = None
    action: str | None = None
    after: str | None = None
    before: str | None = None

    def wants(self, seq: int, vault: str | None) -> bool:
        if seq < self.since or (self.until is not None and seq > self.until):
            return False
        if self.vaulted_only and vault is None:
            return False
        return self.vault is None or vault == self.vault

    @property
    def reads_records(self) -> bool:
        """Whether `matches` needs the record itself, beyond its seq and vault."""
        return any(v is not None for v in (self.actor, self.action, self.after, self.before))

    def matches(self, record: Mapping[str, Any]) -> bool:
        """The filters on a record's content (`wants` already passed)."""
        action, ts = str(record.get("action", "")), str(record.get("ts", ""))
        if self.actor is not None and record.get("actor") != self.actor:
            return False
        if self.action is not None and not (
            action == self.action or action.startswith(self.action + ".")
        ):
            return False
        if self.after is not None and ts < self.after:
            return False
        return self.before is None or ts < self.before


def build(head: Head, events: Iterable[Event], now: float) -> list[dict[str, Any]]:
    """The records that follow `head`, chained to each other."""
    records = []
    for event in events:
        record = make_record(head, action=event.action, ts=timestamp(now), **event.fields)
        head = (record["seq"], record["hash"])
        records.append(record)
    return records


def verify(lines: Iterable[str | bytes], pinned: Head = None) -> Head:
    """Verify a whole chain from genesis, and that it holds `pinned` (seq, hash) if given;
    its head, or AuditChainError at the first bad seq (`truncated` if it ends too soon)."""
    marks = [Checkpoint(pinned[0], pinned[1], "", "")] if pinned else []
    verifier = ChainVerifier(checkpoints=marks)
    for line in lines:
        if not verifier.feed(line):
            break
    report = verifier.finish()
    if not report.ok:
        raise AuditChainError(report.first_bad_seq, report.problem or "broken", report.detail)
    return report.head


async def _head_row(session: AsyncSession) -> AuditHead:
    """The `audit_head` row, locked (FOR UPDATE on PostgreSQL); created on first use."""
    row = await session.scalar(select(AuditHead).where(AuditHead.id == 1).with_for_update())
    if row is None:
        row = AuditHead(id=1, seq=0, hash=GENESIS_HASH)
        session.add(row)
        await session.flush()
    return row


async def _recorded(sessions: async_sessionmaker[AsyncSession]) -> Head:
    async with sessions() as session, session.begin():
        row = await _head_row(session)
        return (row.seq, row.hash) if row.seq else None


class AuditLog(Protocol):
    """What the store needs from either audit backend."""

    uncommitted: list[dict[str, Any]]
    """Records the log holds beyond the head the database committed (JSONL after a crash)."""
    atomic: bool
    """Whether records commit with their change or not at all (the table), so a failed
    commit leaves nothing to repair; a file written before the commit (JSONL) is not."""

    async def start(self, sessions: async_sessionmaker[AsyncSession]) -> None: ...

    async def lock(self, session: AsyncSession) -> Head: ...

    async def append(self, session: AsyncSession, events: list[Event], now: float) -> Head: ...

    async def head(self, session: AsyncSession) -> Head: ...

    async def export(self, session: AsyncSession, selection: Selection) -> list[str]: ...

    async def hash_at(self, session: AsyncSession, seq: int) -> str | None:
        """The hash of the record at `seq`, or None if the chain has no such record."""
        ...

    def close(self) -> None: ...


class JsonlAudit:
    """`audit.jsonl`: only ever appended to, one fsync per record.

    Each change also moves `audit_head` in the database, in the change's own transaction,
    so at start a log that lost its tail (or was swapped) is caught: the file must hold
    the recorded head. A file *ahead* of it means a crash between the fsync and the
    commit; those records are kept in `uncommitted`. The file size after each append is
    remembered, and a file that changed behind the center's back stops the next one."""

    atomic = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uncommitted: list[dict[str, Any]] = []
        self._fd: int | None = None
        self._head: Head = None
        self._size = 0
        self._recent: OrderedDict[int, str] = OrderedDict()

    async def start(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        private_file(self.path)
        recorded = await _recorded(sessions)
        self._head = await asyncio.to_thread(self._verify_file, recorded)
        if self._head is not None and self._head[0] > (recorded[0] if recorded else 0):
            after = Selection(since=(recorded[0] if recorded else 0) + 1)
            self.uncommitted = [json.loads(line) for line in self._select(after)]
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size
        if self._head is not None:
            self._remember(self._head)

    def _remember(self, head: tuple[int, str]) -> None:
        self._recent[head[0]] = head[1]
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    async def hash_at(self, session: AsyncSession, seq: int) -> str | None:
        if seq in self._recent:
            return self._recent[seq]
        if seq < 1 or self._head is None or seq > self._head[0]:
            return None
        return await asyncio.to_thread(self._scan_for, seq)

    def _scan_for(self, seq: int) -> str | None:
        # The chain was verified at start and only grows, so record `seq` is line `seq`.
        with self.path.open(encoding="utf-8") as lines:
            line = next(itertools.islice(lines, seq - 1, seq), None)
        record = json.loads(line) if line else None
        return record["hash"] if record and record.get("seq") == seq else None

    def _verify_file(self, pinned: Head = None) -> Head:
        with self.path.open("rb") as lines:
            return verify(lines, pinned)

    async def lock(self, session: AsyncSession) -> Head:
        return self._head

    async def head(self, session: AsyncSession) -> Head:
        return self._head

    async def append(self, session: AsyncSession, events: list[Event], now: float) -> Head:
        if events:
            await asyncio.to_thread(self._write, build(self._head, events, now))
            assert self._head is not None
            row = await _head_row(session)
            row.seq, row.hash = self._head
            await session.flush()
        return self._head

    def _write(self, records: list[dict[str, Any]]) -> None:
        if self._fd is None:
            raise RestartRequiredError("the audit log is closed")
        try:
            if os.fstat(self._fd).st_size != self._size:
                raise RestartRequiredError("audit.jsonl changed outside the center")
            for record in records:
                data = (to_line(record) + "\n").encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
                self._size += len(data)
                self._head = (record["seq"], record["hash"])
                self._remember(self._head)
        except OSError as exc:
            raise RestartRequiredError(f"audit append failed: {exc.strerror}") from None

    async def export(self, session: AsyncSession, selection: Selection) -> list[str]:
        return await asyncio.to_thread(self._select, selection)

    def _select(self, selection: Selection) -> list[str]:
        self._verify_file()
        with self.path.open(encoding="utf-8") as lines:
            return list(_matching(lines, selection))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _matching(lines: Iterable[str], selection: Selection) -> Iterator[str]:
    for line in lines:
        record = json.loads(line)
        if selection.wants(record["seq"], record["vault"]) and selection.matches(record):
            yield line.rstrip("\n")


class TableAudit:
    """The `audit` table: appends lock the `audit_head` row, so every process serializes,
    and records commit with the change they describe or not at all. A failed append is a
    failed transaction like any other (StorageError, retry later), never a lock: nothing
    was written, and other processes on the database would not be locked anyway."""

    atomic = True

    def __init__(self) -> None:
        self.uncommitted: list[dict[str, Any]] = []

    async def start(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        async with sessions() as session, session.begin():
            row = await _head_row(session)
            recorded = (row.seq, row.hash) if row.seq else None
            lines = await session.stream_scalars(select(AuditRecord.line).order_by(AuditRecord.seq))
            verifier = ChainVerifier()
            async for line in lines:
                if not verifier.feed(line):
                    break
            report = verifier.finish()
            if not report.ok:
                problem = report.problem or "broken"
                raise AuditChainError(report.first_bad_seq, problem, report.detail)
            if report.head != recorded:
                seq = min(report.head[0] if report.head else 0, row.seq) + 1
                raise AuditChainError(seq, "head_mismatch", "audit_head differs from the last row")

    async def lock(self, session: AsyncSession) -> Head:
        row = await _head_row(session)
        return (row.seq, row.hash) if row.seq else None

    async def head(self, session: AsyncSession) -> Head:
        row = await session.get(AuditHead, 1)
        return (row.seq, row.hash) if row is not None and row.seq else None

    async def append(self, session: AsyncSession, events: list[Event], now: float) -> Head:
        head = await self.lock(session)
        records = build(head, events, now)
        if not records:
            return head
        try:
            for record in records:
                line = to_line(record)
                session.add(AuditRecord(seq=record["seq"], vault=record["vault"], line=line))
            row = await _head_row(session)
            row.seq, row.hash = records[-1]["seq"], records[-1]["hash"]
            await session.flush()
        except SQLAlchemyError as exc:
            raise StorageError(f"audit append failed: {type(exc).__name__}") from None
        return (row.seq, row.hash)

    async def export(self, session: AsyncSession, selection: Selection) -> list[str]:
        query = select(AuditRecord.line, AuditRecord.vault).order_by(AuditRecord.seq)
        verifier, lines = ChainVerifier(), []
        async for line, vault in await session.stream(query):
            if not verifier.feed(line):
                break
            if selection.wants(verifier.next_seq - 1, vault) and (
                not selection.reads_records or selection.matches(json.loads(line))
            ):
                lines.append(line)
        report = verifier.finish()
        if not report.ok:
            raise AuditChainError(report.first_bad_seq, report.problem or "broken", report.detail)
        return lines

    async def hash_at(self, session: AsyncSession, seq: int) -> str | None:
        line = await session.scalar(select(AuditRecord.line).where(AuditRecord.seq == seq))
        return str(json.loads(line)["hash"]) if line is not None else None

    def close(self) -> None:
        return None
