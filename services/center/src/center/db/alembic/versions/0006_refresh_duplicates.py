"""Refresh duplicates: `oauth_refresh.duplicates` counts how often a rotated refresh token
came back within the grace, so one past the limit is treated as a replay.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("oauth_refresh") as refresh:
        refresh.add_column(
            sa.Column("duplicates", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("oauth_refresh") as refresh:
        refresh.drop_column("duplicates")
