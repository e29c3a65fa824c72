"""The center's tables, one class each, written once for SQLite and PostgreSQL alike.

Times are Unix seconds (BIGINT) and lists are JSON, so both engines store the same
values. Secrets never reach a row: credentials are SHA-256 digests, passwords argon2id
PHC strings, keys only their public half. Alembic owns the schema (`alembic/versions`);
a test keeps these classes and the migrations in step.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Boolean, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from center.names import Rules

ID = 64
"""Member, node and vault ids: at most 64 characters."""
OBJECT_ID = 32
CLIENT_ID = 255
"""A client id: a registered one is short, a metadata document's is its https URL."""
"""Grant, request and token ids: 128 random bits as 32 hex digits."""


class Base(DeclarativeBase):
    pass


class Member(Base):
    """A durable principal: its role caps its scope; `vaults` is a list or `["*"]`."""

    __tablename__ = "members"

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(24))
    vaults: Mapped[list[str]] = mapped_column(JSON)
    credential_hash: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(256), default=None)
    email: Mapped[str | None] = mapped_column(String(254), unique=True, index=True, default=None)
    created: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[int] = mapped_column(BigInteger)
    last_sign_in: Mapped[int | None] = mapped_column(BigInteger, default=None)
    paths: Mapped[Rules | None] = mapped_column(JSON, default=None)


class Generation(Base):
    """A member's generation counter; kept after removal so a re-created id cannot reset it."""

    __tablename__ = "generations"

    member_id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger)


class Grant(Base):
    """A time-bound delegation. `chain` is its ancestors and itself, root first."""

    __tablename__ = "grants"

    id: Mapped[str] = mapped_column(String(OBJECT_ID), primary_key=True)
    issued_by: Mapped[str] = mapped_column(String(ID), index=True)
    grantee: Mapped[str] = mapped_column(String(ID), index=True)
    scope: Mapped[str] = mapped_column(String(24))
    role: Mapped[str] = mapped_column(String(16))
    vault: Mapped[str] = mapped_column(String(ID), index=True)
    parent: Mapped[str | None] = mapped_column(String(OBJECT_ID), index=True, default=None)
    chain: Mapped[list[str]] = mapped_column(JSON)
    depth: Mapped[int] = mapped_column(Integer)
    issuer_generation: Mapped[int] = mapped_column(BigInteger)
    grantee_generation: Mapped[int] = mapped_column(BigInteger)
    reason: Mapped[str | None] = mapped_column(String(256), default=None)
    request_id: Mapped[str | None] = mapped_column(String(OBJECT_ID), default=None)
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    revoked: Mapped[int | None] = mapped_column(BigInteger, default=None)
    paths: Mapped[Rules | None] = mapped_column(JSON, default=None)


class Request(Base):
    """A member's request for a grant, with the approver's bounds recorded at approval."""

    __tablename__ = "requests"

    id: Mapped[str] = mapped_column(String(OBJECT_ID), primary_key=True)
    requester: Mapped[str] = mapped_column(String(ID), index=True)
    vault: Mapped[str] = mapped_column(String(ID), index=True)
    scope: Mapped[str] = mapped_column(String(24))
    minutes: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(String(256), default=None)
    approvers: Mapped[list[str]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), index=True)
    created: Mapped[int] = mapped_column(BigInteger)
    decided: Mapped[int | None] = mapped_column(BigInteger, default=None)
    decided_by: Mapped[str | None] = mapped_column(String(ID), default=None)
    approver_scope: Mapped[str | None] = mapped_column(String(24), default=None)
    approver_role: Mapped[str | None] = mapped_column(String(16), default=None)
    approver_expiry: Mapped[int | None] = mapped_column(BigInteger, default=None)
    approver_generation: Mapped[int | None] = mapped_column(BigInteger, default=None)
    requester_generation: Mapped[int | None] = mapped_column(BigInteger, default=None)
    grant_id: Mapped[str | None] = mapped_column(String(OBJECT_ID), default=None)
    asked_scope: Mapped[str | None] = mapped_column(String(24), default=None)
    """The scope asked for, kept when the approver narrowed `scope`."""
    asked_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    """The minutes asked for, kept when the approver narrowed `minutes`."""
    decision_reason: Mapped[str | None] = mapped_column(String(256), default=None)
    paths: Mapped[Rules | None] = mapped_column(JSON, default=None)
    """The rules asked for, until decided; then as approved."""
    asked_paths: Mapped[Rules | None] = mapped_column(JSON, default=None)
    """The rules asked for, kept when the approver narrowed `paths`."""


class Node(Base):
    """A registered vault node: its MCP resource URL and what its last heartbeat reported
    (vaults, revocation seq, audit checkpoint and whether the center's chain holds it)."""

    __tablename__ = "nodes"

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    resource: Mapped[str] = mapped_column(String(512))
    credential_hash: Mapped[str] = mapped_column(String(64), unique=True)
    vaults: Mapped[list[str]] = mapped_column(JSON)
    created: Mapped[int] = mapped_column(BigInteger)
    last_seen: Mapped[int | None] = mapped_column(BigInteger, default=None)
    revocation_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    checkpoint_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    checkpoint_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    checkpoint_ok: Mapped[bool | None] = mapped_column(Boolean, default=None)


class Copy(Base):
    """One node's copy of a vault: `primary` (the one writer) or `replica`, whether it is
    in sync (may be promoted), and what the node last reported holding (the highest epoch
    it saw, its head commit and commit count), last changed at `updated` (Unix ms)."""

    __tablename__ = "copies"

    vault: Mapped[str] = mapped_column(String(ID), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(ID), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))
    in_sync: Mapped[bool] = mapped_column(Boolean)
    epoch: Mapped[int | None] = mapped_column(BigInteger, default=None)
    head: Mapped[str | None] = mapped_column(String(64), default=None)
    commits: Mapped[int | None] = mapped_column(BigInteger, default=None)
    created: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[int | None] = mapped_column(BigInteger, default=None)


class VaultLease(Base):
    """A vault's primary lease: which node writes it at which epoch (the fencing token,
    1 and up) until `expires` (Unix ms; null until the primary first renews), sync or
    async replication, the replication factor, and the state: `serving`, `failing_over`
    (expired, no replica in sync to promote) or `moving` to `move_target` (`move_step`
    `catch_up` or `switch`; `move_keep` keeps the old copy)."""

    __tablename__ = "leases"

    vault: Mapped[str] = mapped_column(String(ID), primary_key=True)
    primary_node: Mapped[str | None] = mapped_column(String(ID), default=None)
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int | None] = mapped_column(BigInteger, default=None)
    mode: Mapped[str] = mapped_column(String(8))
    factor: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    move_target: Mapped[str | None] = mapped_column(String(ID), default=None)
    move_step: Mapped[str | None] = mapped_column(String(16), default=None)
    move_keep: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[int] = mapped_column(BigInteger)


class Key(Base):
    """A signing key's public half. Retired keys get `not_after` = the last `exp` they signed."""

    __tablename__ = "keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    public: Mapped[str] = mapped_column(String(64))
    created: Mapped[int] = mapped_column(BigInteger)
    not_after: Mapped[int | None] = mapped_column(BigInteger, default=None)
    max_exp: Mapped[int | None] = mapped_column(BigInteger, default=None)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Token(Base):
    """A node token the center signed for a member (no token material, only its jti)."""

    __tablename__ = "tokens"

    jti: Mapped[str] = mapped_column(String(OBJECT_ID), primary_key=True)
    subject: Mapped[str] = mapped_column(String(ID), index=True)
    issued_by: Mapped[str] = mapped_column(String(ID))
    scope: Mapped[str] = mapped_column(String(64))
    vaults: Mapped[list[str]] = mapped_column(JSON)
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    revoked: Mapped[int | None] = mapped_column(BigInteger, default=None)
    paths: Mapped[Rules | None] = mapped_column(JSON, default=None)


class Feed(Base):
    """The one row of the revocation feed: its `seq` and the digest of what it published."""

    __tablename__ = "feed"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    digest: Mapped[str] = mapped_column(String(64))


class AuditRecord(Base):
    """One audit record as its canonical NDJSON line (PostgreSQL deployments)."""

    __tablename__ = "audit"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    vault: Mapped[str | None] = mapped_column(String(ID), index=True, default=None)
    line: Mapped[str] = mapped_column(Text)


class AuditHead(Base):
    """The one row naming the last audit record; appends lock it (FOR UPDATE)."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))


class OAuthClient(Base):
    """A public OAuth client, registered (RFC 7591) or known by its metadata document's URL
    (then `expires` says when to fetch it again); `last_used` orders LRU eviction."""

    __tablename__ = "oauth_clients"

    id: Mapped[str] = mapped_column(String(CLIENT_ID), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(256), default=None)
    redirect_uris: Mapped[list[str]] = mapped_column(JSON)
    grant_types: Mapped[list[str]] = mapped_column(JSON)
    response_types: Mapped[list[str]] = mapped_column(JSON)
    created: Mapped[int] = mapped_column(BigInteger)
    last_used: Mapped[int] = mapped_column(BigInteger, index=True)
    logo_uri: Mapped[str | None] = mapped_column(String(2048), default=None)
    expires: Mapped[int | None] = mapped_column(BigInteger, default=None)


class OAuthCode(Base):
    """An authorization code by digest, bound to member, client, redirect URI, PKCE
    challenge and resources. A spent code keeps `used` and the `family` it started, so a
    second redemption can kill that family."""

    __tablename__ = "oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(CLIENT_ID))
    member_id: Mapped[str] = mapped_column(String(ID))
    redirect_uri: Mapped[str] = mapped_column(String(2048))
    challenge: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(64))
    resource: Mapped[list[str]] = mapped_column(JSON)
    generation: Mapped[int] = mapped_column(BigInteger)
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    used: Mapped[int | None] = mapped_column(BigInteger, default=None)
    family: Mapped[str | None] = mapped_column(String(OBJECT_ID), default=None)
    vaults: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    """The vaults consented to (None: all the member's)."""


class OAuthFamily(Base):
    """One login's chain of refresh tokens: what every token in it stands for, and
    `revoked` once reuse (or a member change) killed it."""

    __tablename__ = "oauth_families"

    id: Mapped[str] = mapped_column(String(OBJECT_ID), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(CLIENT_ID), index=True)
    member_id: Mapped[str] = mapped_column(String(ID), index=True)
    scope: Mapped[str] = mapped_column(String(64))
    resource: Mapped[list[str]] = mapped_column(JSON)
    generation: Mapped[int] = mapped_column(BigInteger)
    access_jtis: Mapped[list[list[str | int]]] = mapped_column(JSON)
    """[jti, exp] of the family's access tokens that may still be live: revoked with it."""
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    revoked: Mapped[int | None] = mapped_column(BigInteger, default=None)
    vaults: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    """The vaults consented to (None: all the member's); tokens get those the member
    still holds."""


class OAuthConsent(Base):
    """What a member allowed a client: `scope` and `vaults` out of `asked_scope` and
    `asked_vaults`, for a redirect `origin`. One per member and client; a request within
    what was asked, to the same origin, skips the consent page."""

    __tablename__ = "oauth_consents"
    __table_args__ = (
        UniqueConstraint("member_id", "client_id", name="uq_oauth_consents_member_client"),
    )

    id: Mapped[str] = mapped_column(String(OBJECT_ID), primary_key=True)
    member_id: Mapped[str] = mapped_column(String(ID), index=True)
    client_id: Mapped[str] = mapped_column(String(CLIENT_ID), index=True)
    client_name: Mapped[str | None] = mapped_column(String(256), default=None)
    """The client's name when consent was given (listings outlive the client's row)."""
    origin: Mapped[str] = mapped_column(String(2048))
    asked_scope: Mapped[str] = mapped_column(String(64))
    asked_vaults: Mapped[list[str]] = mapped_column(JSON)
    scope: Mapped[str] = mapped_column(String(64))
    vaults: Mapped[list[str]] = mapped_column(JSON)
    created: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[int] = mapped_column(BigInteger)
    used: Mapped[int | None] = mapped_column(BigInteger, default=None)
    """When it last let a sign-in skip the consent page."""


class OAuthRefresh(Base):
    """A refresh token by digest. A rotated one stays (with its successor's digest) until
    it expires: that is how a replay is told apart from an unknown token."""

    __tablename__ = "oauth_refresh"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    family: Mapped[str] = mapped_column(String(OBJECT_ID), index=True)
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    rotated: Mapped[int | None] = mapped_column(BigInteger, default=None)
    successor_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    duplicates: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How often the token came back within the grace after its rotation."""


class OAuthNonce(Base):
    """A login form's nonce, spent: the primary key makes each form usable once."""

    __tablename__ = "oauth_nonces"

    nonce_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)


class Throttle(Base):
    """One limit's state for one key (a digest of the IP or identity it counts): a token
    bucket or a list of recent hits, as JSON. Rows idle past `expires` are pruned."""

    __tablename__ = "throttles"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(Text)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)


class Account(Base):
    """A member that registered itself (`kind` email or username), and the vault it got."""

    __tablename__ = "accounts"

    member_id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    vault: Mapped[str] = mapped_column(String(ID), unique=True)
    created: Mapped[int] = mapped_column(BigInteger)


class PendingAccount(Base):
    """An e-mail registration awaiting its code: the SHA-256 of the normalized address and
    of the code only, never either in clear; `attempts` counts wrong codes."""

    __tablename__ = "accounts_pending"

    identity_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    created: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
    attempts: Mapped[int] = mapped_column(Integer)


class ConsoleSession(Base):
    """A signed-in browser of the console, by the SHA-256 of its cookie: who (a member or
    the operator), at which member generation, and when it idles out and ends for good."""

    __tablename__ = "console_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    principal: Mapped[str] = mapped_column(String(ID), index=True)
    generation: Mapped[int] = mapped_column(BigInteger)
    created: Mapped[int] = mapped_column(BigInteger)
    seen: Mapped[int] = mapped_column(BigInteger)
    expires: Mapped[int] = mapped_column(BigInteger, index=True)
