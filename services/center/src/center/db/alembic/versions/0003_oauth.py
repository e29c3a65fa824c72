"""OAuth 2.1: registered clients, authorization codes, refresh-token families and their
rotated tokens, spent login-form nonces, and members' optional (unique) e-mail address.

Every secret is stored as its SHA-256 digest only (`*_hash`); the plaintext exists only
in the response that handed it out.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _time(name: str, nullable: bool = False, index: bool = False) -> sa.Column[int]:
    return sa.Column(name, sa.BigInteger(), nullable=nullable, index=index)


def upgrade() -> None:
    op.add_column("members", sa.Column("email", sa.String(254), nullable=True))
    op.create_index("ix_members_email", "members", ["email"], unique=True)
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(256), nullable=True),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("grant_types", sa.JSON(), nullable=False),
        sa.Column("response_types", sa.JSON(), nullable=False),
        _time("created"),
        _time("last_used", index=True),
    )
    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("client_id", sa.String(32), nullable=False),
        sa.Column("member_id", sa.String(64), nullable=False),
        sa.Column("redirect_uri", sa.String(2048), nullable=False),
        sa.Column("challenge", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("resource", sa.JSON(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        _time("created"),
        _time("expires", index=True),
        _time("used", nullable=True),
        sa.Column("family", sa.String(32), nullable=True),
    )
    op.create_table(
        "oauth_families",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("client_id", sa.String(32), nullable=False, index=True),
        sa.Column("member_id", sa.String(64), nullable=False, index=True),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("resource", sa.JSON(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("access_jtis", sa.JSON(), nullable=False),
        _time("created"),
        _time("expires", index=True),
        _time("revoked", nullable=True),
    )
    op.create_table(
        "oauth_refresh",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("family", sa.String(32), nullable=False, index=True),
        _time("created"),
        _time("expires", index=True),
        _time("rotated", nullable=True),
        sa.Column("successor_hash", sa.String(64), nullable=True),
    )
    op.create_table(
        "oauth_nonces",
        sa.Column("nonce_hash", sa.String(64), primary_key=True),
        _time("expires", index=True),
    )


def downgrade() -> None:
    for table in ("oauth_nonces", "oauth_refresh", "oauth_families", "oauth_codes"):
        op.drop_table(table)
    op.drop_table("oauth_clients")
    op.drop_index("ix_members_email", table_name="members")
    with op.batch_alter_table("members") as batch:
        batch.drop_column("email")
