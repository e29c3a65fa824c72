"""The console: `console_sessions` (signed-in browsers, by cookie digest), a member's
last sign-in, and a request's decision details (what was asked before an approver
narrowed it, and the reason given for a decision).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(64), nullable=False, index=True),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("seen", sa.BigInteger(), nullable=False),
        sa.Column("expires", sa.BigInteger(), nullable=False, index=True),
    )
    with op.batch_alter_table("members") as members:
        members.add_column(sa.Column("last_sign_in", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("requests") as requests:
        requests.add_column(sa.Column("asked_scope", sa.String(24), nullable=True))
        requests.add_column(sa.Column("asked_minutes", sa.Integer(), nullable=True))
        requests.add_column(sa.Column("decision_reason", sa.String(256), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("requests") as requests:
        requests.drop_column("decision_reason")
        requests.drop_column("asked_minutes")
        requests.drop_column("asked_scope")
    with op.batch_alter_table("members") as members:
        members.drop_column("last_sign_in")
    op.drop_table("console_sessions")
