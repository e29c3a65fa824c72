"""Nodes and placement: the audit checkpoint a node last reported (and whether the
center's chain holds it), and the `placements` table of vaults assigned to nodes.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("nodes", sa.Column("checkpoint_hash", sa.String(64), nullable=True))
    op.add_column("nodes", sa.Column("checkpoint_ok", sa.Boolean(), nullable=True))
    op.create_table(
        "placements",
        sa.Column("vault", sa.String(64), primary_key=True),
        sa.Column("node_id", sa.String(64), nullable=False, index=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("placements")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("checkpoint_ok")
        batch.drop_column("checkpoint_hash")
