"""Alembic environment: migrations always run on a connection the center hands over.

`center.db.engine.migrate` opens the connection (under an advisory lock on PostgreSQL)
and passes it in `config.attributes["connection"]`; there is no alembic.ini and no URL
here, so no credential is ever read from a file.
"""

from __future__ import annotations

from alembic import context

from center.db.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
