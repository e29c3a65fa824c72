"""Self-service accounts: `accounts` (which members registered themselves, and their
vault) and `accounts_pending` (e-mail registrations awaiting their code, by digest only).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("member_id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("vault", sa.String(64), nullable=False, unique=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "accounts_pending",
        sa.Column("identity_hash", sa.String(64), primary_key=True),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("expires", sa.BigInteger(), nullable=False, index=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("accounts_pending")
    op.drop_table("accounts")
