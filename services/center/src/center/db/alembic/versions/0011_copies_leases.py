"""Replication: `copies`, every node's copy of a vault (primary or replica, in sync or
not, what it last reported), and `leases`, per vault its primary's lease (epoch, expiry,
mode, factor, state and a move under way). Every placement becomes the primary copy on
its node with a lease at epoch 1 that no primary renewed yet; `placements` goes.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "copies",
        sa.Column("vault", sa.String(64), primary_key=True),
        sa.Column("node_id", sa.String(64), primary_key=True, index=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("in_sync", sa.Boolean(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=True),
        sa.Column("head", sa.String(64), nullable=True),
        sa.Column("commits", sa.BigInteger(), nullable=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("updated", sa.BigInteger(), nullable=True),
    )
    op.create_table(
        "leases",
        sa.Column("vault", sa.String(64), primary_key=True),
        sa.Column("primary_node", sa.String(64), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires", sa.BigInteger(), nullable=True),
        sa.Column("mode", sa.String(8), nullable=False),
        sa.Column("factor", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("move_target", sa.String(64), nullable=True),
        sa.Column("move_step", sa.String(16), nullable=True),
        sa.Column("move_keep", sa.Boolean(), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
    )
    op.execute(
        "INSERT INTO copies (vault, node_id, role, in_sync, created)"
        " SELECT vault, node_id, 'primary', TRUE, created FROM placements"
    )
    op.execute(
        "INSERT INTO leases (vault, primary_node, epoch, mode, factor, state, move_keep, created)"
        " SELECT vault, node_id, 1, 'sync', 2, 'serving', FALSE, created FROM placements"
    )
    op.drop_table("placements")


def downgrade() -> None:
    op.create_table(
        "placements",
        sa.Column("vault", sa.String(64), primary_key=True),
        sa.Column("node_id", sa.String(64), nullable=False, index=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
    )
    op.execute(
        "INSERT INTO placements (vault, node_id, created)"
        " SELECT vault, node_id, created FROM copies WHERE role = 'primary'"
    )
    op.drop_table("leases")
    op.drop_table("copies")
