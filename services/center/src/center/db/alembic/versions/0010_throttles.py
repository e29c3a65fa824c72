"""Shared limits: `throttles`, one row per limit and key (a digest of the IP or identity)
holding its state, so every center process on one database counts against one budget;
and the one rows of the audit head and the revocation feed seeded, so the first starts
and publishers of several centers lock a row instead of racing to insert it.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None
GENESIS = "0" * 64
"""The hash an empty audit chain's head holds (`tickets.GENESIS_HASH`)."""


def upgrade() -> None:
    op.create_table(
        "throttles",
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("expires", sa.BigInteger(), nullable=False, index=True),
    )
    for table, values in (("audit_head", f"0, '{GENESIS}'"), ("feed", "0, ''")):
        op.execute(
            f"INSERT INTO {table} SELECT 1, {values}"
            f" WHERE NOT EXISTS (SELECT 1 FROM {table} WHERE id = 1)"
        )


def downgrade() -> None:
    op.drop_table("throttles")
