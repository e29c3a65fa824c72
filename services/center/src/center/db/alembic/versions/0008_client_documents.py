"""Client ID metadata documents: a client's id may be the https URL of its metadata (up to
255 characters, so every column holding a client id widens), `logo_uri` from the document,
and `expires`, when a fetched document must be fetched again (NULL: a registered client).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None
CLIENT_IDS = (
    ("oauth_clients", "id"),
    ("oauth_codes", "client_id"),
    ("oauth_families", "client_id"),
)


def upgrade() -> None:
    for table, column in CLIENT_IDS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=sa.String(255), existing_type=sa.String(32))
    with op.batch_alter_table("oauth_clients") as clients:
        clients.add_column(sa.Column("logo_uri", sa.String(2048), nullable=True))
        clients.add_column(sa.Column("expires", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.execute("DELETE FROM oauth_clients WHERE expires IS NOT NULL")
    with op.batch_alter_table("oauth_clients") as clients:
        clients.drop_column("expires")
        clients.drop_column("logo_uri")
    for table, column in CLIENT_IDS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=sa.String(32), existing_type=sa.String(255))
