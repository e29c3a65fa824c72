"""The models and the migrations describe the same schema, on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect

from center.config import Settings
from center.db import Base, make_engine, migrate


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


def _names(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


@pytest.mark.asyncio
async def test_the_migrations_create_exactly_the_models(settings: Settings) -> None:
    engine = make_engine(settings)
    try:
        await migrate(engine)
        async with engine.connect() as connection:
            differences = await connection.run_sync(_differences)
            tables = await connection.run_sync(_names)
    finally:
        await engine.dispose()
    assert differences == []
    assert set(Base.metadata.tables) <= tables


def test_no_column_is_named_like_a_secret() -> None:
    columns = {c.name for table in Base.metadata.tables.values() for c in table.columns}
    for word in ("token", "secret", "password", "credential", "private"):
        assert all(word not in name or name.endswith("_hash") for name in columns), word
