"""Open the database the same way on SQLite and PostgreSQL, and migrate it at start.

SQLite gets its file created 0600 before the driver touches it, WAL, full fsync and an
explicit BEGIN (pysqlite's implicit transactions would let a read slip between a check
and its write). PostgreSQL may be confined to one schema through `search_path`, and
concurrent starts migrate one at a time under an advisory lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from center.config import Settings

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"
HEAD = "0009"
_MIGRATION_LOCK = 0x5EC0_0D_B1  # the advisory lock id every center process agrees on
FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    path.chmod(DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create `path` if missing and make it 0600, before anything else opens it."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(descriptor, FILE_MODE)
    finally:
        os.close(descriptor)
    return path


def _sqlite_path(url: str) -> Path | None:
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_sqlite_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN")


def make_engine(settings: Settings) -> AsyncEngine:
    """An AsyncEngine for the configured database, with the per-backend setup above."""
    if settings.backend == "sqlite":
        path = _sqlite_path(settings.url)
        if path is not None:
            private_dir(path.parent)
            private_file(path)
        engine = create_async_engine(settings.url)
        event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
        event.listen(engine.sync_engine, "begin", _on_sqlite_begin)
        return engine
    connect_args: dict[str, Any] = {}
    if settings.database_schema:
        connect_args["server_settings"] = {"search_path": settings.database_schema}
    return create_async_engine(settings.url, connect_args=connect_args, pool_pre_ping=True)


def _upgrade(connection: Connection) -> None:
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def current_revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext  # noqa: PLC0415 - used once, at start

    return MigrationContext.configure(connection).get_current_revision()


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision; safe when several centers start at once."""
    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK}
            )
        await connection.run_sync(_upgrade)
