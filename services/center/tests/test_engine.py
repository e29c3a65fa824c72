"""Opening the database: private files, the SQLite pragmas, schemas, and migrations."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text

from center.config import Settings
from center.db import make_engine, migrate, private_dir, private_file
from center.db.engine import ALEMBIC_DIR, HEAD, current_revision


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dirs_and_files_are_owner_only(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    loose.chmod(0o777)
    assert mode(private_dir(loose / "a" / "b")) == 0o700
    assert mode(private_dir(loose)) == 0o700
    existing = loose / "file"
    existing.write_text("x")
    existing.chmod(0o644)
    assert mode(private_file(existing)) == 0o600
    assert existing.read_text() == "x"


@pytest.mark.asyncio
async def test_the_sqlite_file_is_created_private(sqlite_settings: Settings) -> None:
    engine = make_engine(sqlite_settings)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    assert mode(sqlite_settings.data_dir) == 0o700
    assert mode(sqlite_settings.data_dir / "center.db") == 0o600


@pytest.mark.asyncio
async def test_sqlite_runs_with_wal_full_sync_and_foreign_keys(sqlite_settings: Settings) -> None:
    engine = make_engine(sqlite_settings)
    try:
        async with engine.connect() as connection:
            pragmas = [
                (await connection.execute(text(f"PRAGMA {name}"))).scalar()
                for name in ("journal_mode", "synchronous", "foreign_keys")
            ]
    finally:
        await engine.dispose()
    assert pragmas == ["wal", 2, 1]


@pytest.mark.asyncio
async def test_migrations_reach_head_and_are_idempotent(settings: Settings) -> None:
    engine = make_engine(settings)
    try:
        await migrate(engine)
        await migrate(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(current_revision) == HEAD
    finally:
        await engine.dispose()


@pytest.mark.asyncio
async def test_postgresql_tables_stay_in_their_schema(postgres_settings: Settings) -> None:
    engine = make_engine(postgres_settings)
    try:
        await migrate(engine)
        async with engine.connect() as connection:
            query = "SELECT DISTINCT table_schema FROM information_schema.tables WHERE {}"
            rows = await connection.execute(text(query.format("table_name = 'members'")))
            schemas = {row[0] for row in rows}
    finally:
        await engine.dispose()
    assert postgres_settings.database_schema in schemas
    assert "public" not in schemas


def _to(revision: str) -> Any:
    def upgrade(connection: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(ALEMBIC_DIR))
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    return upgrade


@pytest.mark.asyncio
async def test_the_nodes_migration_keeps_registered_nodes(settings: Settings) -> None:
    engine = make_engine(settings)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_to("0001"))
            await connection.execute(
                text(
                    "INSERT INTO nodes (id, resource, credential_hash, vaults, created)"
                    " VALUES ('a', 'https://a.test/mcp', :digest, '[\"team\"]', 1)"
                ),
                {"digest": "0" * 64},
            )
        await migrate(engine)
        async with engine.connect() as connection:
            row = (
                await connection.execute(
                    text("SELECT id, checkpoint_hash, checkpoint_ok FROM nodes")
                )
            ).one()
            copies = (await connection.execute(text("SELECT count(*) FROM copies"))).one()
    finally:
        await engine.dispose()
    assert tuple(row) == ("a", None, None)
    assert copies[0] == 0  # placements (none here) became copies in 0011


@pytest.mark.asyncio
async def test_the_paths_migration_leaves_every_member_its_whole_vaults(
    settings: Settings,
) -> None:
    engine = make_engine(settings)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_to("0006"))
            await connection.execute(
                text(
                    "INSERT INTO members (id, role, scope, vaults, credential_hash, created,"
                    " updated) VALUES ('alice', 'reader', 'read', '[\"team\"]', :digest, 1, 1)"
                ),
                {"digest": "0" * 64},
            )
        await migrate(engine)
        async with engine.connect() as connection:
            row = (await connection.execute(text("SELECT id, paths FROM members"))).one()
            asked = await connection.execute(text("SELECT paths, asked_paths FROM requests"))
    finally:
        await engine.dispose()
    assert tuple(row) == ("alice", None)
    assert asked.all() == []


@pytest.mark.asyncio
async def test_the_consents_migration_leaves_earlier_sign_ins_all_their_vaults(
    settings: Settings,
) -> None:
    """A refresh family from before consent existed keeps working: NULL vaults means all
    the member's, and no consent is invented for it."""
    engine = make_engine(settings)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_to("0008"))
            await connection.execute(
                text(
                    "INSERT INTO oauth_families (id, client_id, member_id, scope, resource,"
                    " generation, access_jtis, created, expires) VALUES ('f', 'c', 'alice',"
                    " 'read', '[]', 1, '[]', 1, 2)"
                )
            )
        await migrate(engine)
        async with engine.connect() as connection:
            row = (await connection.execute(text("SELECT id, vaults FROM oauth_families"))).one()
            kept = (await connection.execute(text("SELECT count(*) FROM oauth_consents"))).one()
    finally:
        await engine.dispose()
    assert tuple(row) == ("f", None)
    assert kept[0] == 0
