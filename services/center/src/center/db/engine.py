"""Open the database the same way on SQLite and PostgreSQL, and bring its schema to
this code's revision.

SQLite gets its file created 0600 before the driver touches it, WAL, full fsync and an
explicit BEGIN (pysqlite's implicit transactions would let a read slip between a check
and its write). PostgreSQL may be confined to one schema through `search_path`.

Migrations run under an advisory lock on PostgreSQL, so any number of centers and
`migrate` runs may start at once. There a center sets up an empty database but never
migrates one: a schema older or newer than its code is refused (SchemaError) and
`secondbrain-center migrate` is the step that upgrades it. The one SQLite process
migrates at start.
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
from center.errors import SchemaError

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"
HEAD = "0011"
_MIGRATION_LOCK = 0x5EC0_0D_B1  # the advisory lock id every center process agrees on
CONNECT_TIMEOUT = 10
"""Seconds to connect to PostgreSQL: a server that went away fails requests (503) fast."""
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
    connect_args: dict[str, Any] = {"timeout": CONNECT_TIMEOUT}
    if settings.database_schema:
        connect_args["server_settings"] = {"search_path": settings.database_schema}
    return create_async_engine(settings.url, connect_args=connect_args, pool_pre_ping=True)


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(_config(connection), "head")


def known_revisions() -> frozenset[str]:
    """Every revision this code has a migration for."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415 - used once, at start

    return frozenset(
        script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()
    )


def schema_problem(revision: str | None) -> str | None:
    """Why a center of this code cannot serve a schema at `revision` (None: it can, or
    the database is empty and the center sets it up)."""
    if revision is None or revision == HEAD:
        return None
    if revision in known_revisions():
        return (
            f"the database schema is at revision {revision} and this center needs {HEAD};"
            " run `secondbrain-center migrate` once, then start the centers"
        )
    return (
        f"the database schema is at revision {revision}, newer than this center knows"
        f" ({HEAD}); run the center release that migrated it"
    )


def current_revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext  # noqa: PLC0415 - used once, at start

    return MigrationContext.configure(connection).get_current_revision()


async def migrate(engine: AsyncEngine, *, upgrade: bool = True) -> tuple[str | None, str]:
    """Under the migration lock: set up an empty database, and bring an older schema to
    this code's revision if `upgrade` (else SchemaError); a newer schema is always refused.
    The revisions before and after; a second run changes nothing."""
    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK}
            )
        before = await connection.run_sync(current_revision)
        problem = schema_problem(before)
        if problem is not None and (not upgrade or before not in known_revisions()):
            raise SchemaError(problem)
        await connection.run_sync(_upgrade)
    return before, HEAD
