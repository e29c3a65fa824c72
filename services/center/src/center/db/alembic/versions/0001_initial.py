"""Initial schema: members, generations, grants, requests, nodes, keys, tokens, feed, audit.

On PostgreSQL the audit table refuses UPDATE and DELETE by trigger: it is append-only
there, the way `audit.jsonl` is on SQLite deployments.

Revision ID: 0001
Revises: none
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_APPEND_ONLY = (
    """CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'the audit table is append-only';
    END $$""",
    """CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit
      FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()""",
)


def _id(name: str, **kw: object) -> sa.Column[str]:
    return sa.Column(name, sa.String(64), **kw)  # type: ignore[arg-type]


def _oid(name: str, **kw: object) -> sa.Column[str]:
    return sa.Column(name, sa.String(32), **kw)  # type: ignore[arg-type]


def _time(name: str, nullable: bool = False) -> sa.Column[int]:
    return sa.Column(name, sa.BigInteger(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "members",
        _id("id", primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(24), nullable=False),
        sa.Column("vaults", sa.JSON(), nullable=False),
        sa.Column("credential_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(256), nullable=True),
        _time("created"),
        _time("updated"),
    )
    op.create_table(
        "generations",
        _id("member_id", primary_key=True),
        sa.Column("generation", sa.BigInteger(), nullable=False),
    )
    _grants()
    _requests()
    _nodes_and_keys()
    _tokens()
    _feed_and_audit()


def _nodes_and_keys() -> None:
    op.create_table(
        "nodes",
        _id("id", primary_key=True),
        sa.Column("resource", sa.String(512), nullable=False),
        sa.Column("credential_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("vaults", sa.JSON(), nullable=False),
        _time("created"),
        _time("last_seen", nullable=True),
        _time("revocation_seq", nullable=True),
        _time("checkpoint_seq", nullable=True),
    )
    op.create_table(
        "keys",
        sa.Column("kid", sa.String(64), primary_key=True),
        sa.Column("public", sa.String(64), nullable=False),
        _time("created"),
        _time("not_after", nullable=True),
        _time("max_exp", nullable=True),
        sa.Column("revoked", sa.Boolean(), nullable=False),
    )


def _grants() -> None:
    op.create_table(
        "grants",
        _oid("id", primary_key=True),
        _id("issued_by", nullable=False, index=True),
        _id("grantee", nullable=False, index=True),
        sa.Column("scope", sa.String(24), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        _id("vault", nullable=False, index=True),
        _oid("parent", nullable=True, index=True),
        sa.Column("chain", sa.JSON(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("issuer_generation", sa.BigInteger(), nullable=False),
        sa.Column("grantee_generation", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(256), nullable=True),
        _oid("request_id", nullable=True),
        _time("created"),
        sa.Column("expires", sa.BigInteger(), nullable=False, index=True),
        _time("revoked", nullable=True),
    )


def _requests() -> None:
    op.create_table(
        "requests",
        _oid("id", primary_key=True),
        _id("requester", nullable=False, index=True),
        _id("vault", nullable=False, index=True),
        sa.Column("scope", sa.String(24), nullable=False),
        sa.Column("minutes", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(256), nullable=True),
        sa.Column("approvers", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        _time("created"),
        _time("decided", nullable=True),
        _id("decided_by", nullable=True),
        sa.Column("approver_scope", sa.String(24), nullable=True),
        sa.Column("approver_role", sa.String(16), nullable=True),
        _time("approver_expiry", nullable=True),
        _time("approver_generation", nullable=True),
        _time("requester_generation", nullable=True),
        _oid("grant_id", nullable=True),
    )


def _tokens() -> None:
    op.create_table(
        "tokens",
        _oid("jti", primary_key=True),
        _id("subject", nullable=False, index=True),
        _id("issued_by", nullable=False),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("vaults", sa.JSON(), nullable=False),
        _time("created"),
        sa.Column("expires", sa.BigInteger(), nullable=False, index=True),
        _time("revoked", nullable=True),
    )


def _feed_and_audit() -> None:
    op.create_table(
        "feed",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
    )
    op.create_table(
        "audit",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        _id("vault", nullable=True, index=True),
        sa.Column("line", sa.Text(), nullable=False),
    )
    op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    if op.get_bind().dialect.name == "postgresql":
        for statement in _APPEND_ONLY:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER audit_append_only ON audit")
        op.execute("DROP FUNCTION audit_append_only()")
    for table in (
        "audit_head",
        "audit",
        "feed",
        "tokens",
        "keys",
        "nodes",
        "requests",
        "grants",
        "generations",
        "members",
    ):
        op.drop_table(table)
