"""OAuth consent: `oauth_consents`, what a member allowed a client (per member and client,
with the redirect origin and what was asked, so a wider request asks again), and
`vaults` on codes and refresh families, the vaults consented to (NULL: all the member's,
as every code and family made before consent existed).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None
NARROWED = ("oauth_codes", "oauth_families")


def upgrade() -> None:
    op.create_table(
        "oauth_consents",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("member_id", sa.String(64), nullable=False, index=True),
        sa.Column("client_id", sa.String(255), nullable=False, index=True),
        sa.Column("client_name", sa.String(256), nullable=True),
        sa.Column("origin", sa.String(2048), nullable=False),
        sa.Column("asked_scope", sa.String(64), nullable=False),
        sa.Column("asked_vaults", sa.JSON(), nullable=False),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("vaults", sa.JSON(), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("updated", sa.BigInteger(), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("member_id", "client_id", name="uq_oauth_consents_member_client"),
    )
    for name in NARROWED:
        with op.batch_alter_table(name) as table:
            table.add_column(sa.Column("vaults", sa.JSON(), nullable=True))


def downgrade() -> None:
    for name in reversed(NARROWED):
        with op.batch_alter_table(name) as table:
            table.drop_column("vaults")
    op.drop_table("oauth_consents")
