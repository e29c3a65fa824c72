"""Path rules (folder-scoped access): `paths` on members, grants, requests and tokens, and
a request's `asked_paths` (what was asked before an approver narrowed it). NULL: the
whole of every vault named.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
TABLES = ("members", "grants", "requests", "tokens")


def upgrade() -> None:
    for name in TABLES:
        with op.batch_alter_table(name) as table:
            table.add_column(sa.Column("paths", sa.JSON(), nullable=True))
    with op.batch_alter_table("requests") as requests:
        requests.add_column(sa.Column("asked_paths", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("requests") as requests:
        requests.drop_column("asked_paths")
    for name in reversed(TABLES):
        with op.batch_alter_table(name) as table:
            table.drop_column("paths")
