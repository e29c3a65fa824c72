"""Self-service accounts (docs/design.md#accounts): a person registers, by e-mail or by
username, and becomes a member owning a fresh random vault placed on a node.

E-mail mode mails a 256-bit code valid 15 minutes, once; the center keeps only keyed
digests of the address and the code, and the row appears only after the mail server
took the mail, so a transport failure (503) leaves nothing behind. The password is
chosen when the code is redeemed. No address, code or password reaches a log line or an
audit record: the records name the new member and its vault, nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import nodes
from center.attempts import Attempts, Kind
from center.auth import digest, new_credential
from center.config import MAILBOX, Settings
from center.db import Copy, Generation, Member, Node, VaultLease
from center.db.models import Account, PendingAccount
from center.errors import (
    ConflictError,
    ExistsError,
    ForbiddenError,
    InvalidArgumentError,
    LimitError,
    RestartRequiredError,
    UnavailableError,
)
from center.log import get_logger
from center.mail import LOCALES, Mailer, Templates
from center.passwords import Passwords, check_password
from center.principals import FIRST_GENERATION, check_member_id, role_and_scope
from center.store import Change, Store

CODE_TTL = 15 * 60
MAX_PENDING = 1024
MAX_CODE_ATTEMPTS = 5
"""Wrong codes a pending registration survives; the next one burns it."""
FRESH_NODE = 600
"""A node heard from within this many seconds is preferred for a new vault."""
USERNAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
BAD_CODE = "unknown, used or expired code; register again to get a new one"
PUBLIC = "public"
"""The audit actor of an unauthenticated caller."""


def normalize_email(value: str) -> str:
    """Outer spaces dropped, ASCII case folded; only ASCII mailbox addresses pass."""
    address = value.strip()
    if not address.isascii() or not MAILBOX.fullmatch(address) or len(address) > 254:
        raise InvalidArgumentError("email", "use an ASCII address like name@example.org")
    return address.lower()


def normalize_username(value: str) -> str:
    """3-64 of ASCII letters, digits, '-' and '_', case folded; never a reserved id."""
    name = value.strip()
    if not name.isascii() or not 3 <= len(name) <= 64 or set(name.lower()) - USERNAME_CHARS:
        raise InvalidArgumentError("username", "use 3-64 of A-Z, a-z, 0-9, '-' and '_'")
    return check_member_id(name.lower())


class Accounts:
    """Registration and verification for one running center."""

    def __init__(self, settings: Settings, store: Store, passwords: Passwords) -> None:
        self.settings = settings
        self.store = store
        self.passwords = passwords
        self.attempts = Attempts(store)
        self.templates = Templates()
        self.mailer = Mailer(settings) if settings.registration == "email" else None
        secret = settings.secret.get_secret_value().encode("utf-8")
        self._key = hashlib.sha256(b"secondbrain-accounts-v1\0" + secret).digest()
        self._sending: set[str] = set()

    def public_view(self) -> dict[str, Any]:
        """What a sign-up page needs; never anything about SMTP."""
        return {
            "registration": self.settings.registration,
            "locales": list(LOCALES),
            "code_minutes": CODE_TTL // 60,
            "password_bytes": [12, 256],
        }

    def _identity(self, kind: str, value: str) -> str:
        return hmac.new(self._key, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()

    def require(self, mode: str) -> None:
        """403 unless registration is open in `mode`."""
        if self.settings.registration == "off":
            raise ForbiddenError("registration is closed on this center; ask its operator")
        if self.settings.registration != mode:
            raise ForbiddenError(f"this center registers by {self.settings.registration}")

    async def admit(self, kind: Kind, identity: str) -> None:
        """Count one attempt for `identity` (a hashed address or a username)."""
        await self.attempts.admit(kind, identity)

    def _sign_in_identity(self, username: str) -> str:
        name = username.strip()
        kind, value = ("email", name.lower()) if "@" in name else ("member", name)
        return self._identity(kind, value)

    async def sign_in_allowed(self, username: str) -> None:
        """RateLimitedError once the name typed on the login page has failed 10 times in
        15 minutes (the login-or-verify limit of docs/design.md#accounts; an address shares
        its window with code verification). Unknown names count alike: the limit tells
        nobody who exists."""
        await self.attempts.refuse_if_spent("login", self._sign_in_identity(username))

    async def sign_in_failed(self, username: str) -> None:
        await self.attempts.count("login", self._sign_in_identity(username))

    # ---------------------------------------------------------------- e-mail mode

    async def request_code(self, email: str, locale: str | None) -> None:
        """Mail a code to `email` unless one is pending or the address has an account; the
        answer is the same either way, so it tells nobody which addresses exist."""
        self.require("email")
        address = normalize_email(email)
        key = self._identity("email", address)
        await self.admit("register", key)
        if self.store.locked is not None:  # refuse before mailing a code nothing would keep
            raise RestartRequiredError(self.store.locked)
        if key in self._sending or not await self._may_mail(key, address):
            return
        self._sending.add(key)
        try:
            code = secrets.token_urlsafe(32)
            values = {"code": code, "minutes": CODE_TTL // 60, "center": self.settings.issuer}
            mail = self.templates.render("verify", address, locale or "en", **values)
            assert self.mailer is not None
            await self.mailer.send(mail, self.store.clock())
            async with self.store.change() as work:
                await self._remember(work, key, code)
        finally:
            self._sending.discard(key)

    async def _may_mail(self, key: str, address: str) -> bool:
        now = self.store.now()
        async with self.store.read() as session:
            if await session.scalar(select(Member.id).where(Member.email == address)):
                return False
            pending = await session.get(PendingAccount, key)
            if pending is not None and pending.expires > now:
                return False
            waiting = await _pending_count(session, now)
            await self._check_room(session)
        if waiting >= MAX_PENDING:
            raise LimitError(f"{MAX_PENDING} registrations are pending; try again later")
        return True

    async def _check_room(self, session: AsyncSession) -> None:
        count = await session.scalar(select(func.count()).select_from(Account))
        if (count or 0) >= self.settings.max_accounts:
            raise ForbiddenError("this center takes no more registrations; ask its operator")

    async def _remember(self, work: Change, key: str, code: str) -> None:
        await work.session.execute(delete(PendingAccount).where(PendingAccount.expires <= work.now))
        if await work.session.get(PendingAccount, key) is not None:
            return  # another process mailed this address meanwhile; its code stands
        row = PendingAccount(
            identity_hash=key,
            code_hash=self._code_digest(key, code),
            created=work.now,
            expires=work.now + CODE_TTL,
            attempts=0,
        )
        work.session.add(row)
        work.record("account.request", actor=PUBLIC, reason="verification mail sent")

    def _code_digest(self, key: str, code: str) -> str:
        return hmac.new(self._key, f"{key}:{code}".encode(), hashlib.sha256).hexdigest()

    async def verify(self, email: str, code: str, password: str) -> dict[str, Any]:
        """Redeem a code with the password chosen now: the account, its credential (shown
        once) and its vault. A wrong code counts against the registration."""
        self.require("email")
        address = normalize_email(email)
        key = self._identity("email", address)
        await self.admit("login", key)
        check_password(password)
        if not await self._code_holds(key, code):
            await self._wrong_code(key)
            raise InvalidArgumentError("code", BAD_CODE)
        password_hash = await self.passwords.hash(password)
        async with self.store.change() as work:
            row = await work.session.get(PendingAccount, key, with_for_update=True)
            if row is None or row.expires <= work.now or not self._matches(row, key, code):
                raise InvalidArgumentError("code", BAD_CODE)
            await work.session.delete(row)
            member_id = "acct-" + secrets.token_hex(8)
            return await self._create(work, "email", member_id, password_hash, email=address)

    def _matches(self, row: PendingAccount, key: str, code: str) -> bool:
        return hmac.compare_digest(row.code_hash, self._code_digest(key, code))

    async def _code_holds(self, key: str, code: str) -> bool:
        async with self.store.read() as session:
            row = await session.get(PendingAccount, key)
        return row is not None and row.expires > self.store.now() and self._matches(row, key, code)

    async def _wrong_code(self, key: str) -> None:
        """Count a wrong code on a live registration (audited); burn it after the last try."""
        async with self.store.change() as work:
            row = await work.session.get(PendingAccount, key, with_for_update=True)
            if row is None or row.expires <= work.now:
                get_logger().info("account.unknown_code")
                return
            row.attempts += 1
            burnt = row.attempts >= MAX_CODE_ATTEMPTS
            if burnt:
                await work.session.delete(row)
            reason = "wrong code; registration cancelled" if burnt else "wrong code"
            work.record("account.reject", actor=PUBLIC, reason=reason)

    # ---------------------------------------------------------------- username mode

    async def register_username(self, username: str, password: str) -> dict[str, Any]:
        """Create an account at once: no mail, the username is the member id."""
        self.require("username")
        name = normalize_username(username)
        await self.admit("register", self._identity("username", name))
        check_password(password)
        async with self.store.read() as session:
            await self._check_room(session)
            if await session.get(Member, name) is not None:
                raise ExistsError("account", name)
        password_hash = await self.passwords.hash(password)
        async with self.store.change() as work:
            return await self._create(work, "username", name, password_hash)

    # ---------------------------------------------------------------- both

    async def _create(
        self, work: Change, kind: str, member_id: str, password_hash: str, email: str | None = None
    ) -> dict[str, Any]:
        role, scope = role_and_scope(self.settings.account_role, self.settings.account_scope)
        await self._check_room(work.session)
        if await work.session.get(Member, member_id) is not None:
            raise ExistsError("account", member_id)
        if email and await work.session.scalar(select(Member.id).where(Member.email == email)):
            raise ConflictError("an account with this address exists; log in instead")
        vault = await _new_vault(work.session)
        node = await choose_node(work.session, work.now)
        if await work.session.get(Generation, member_id) is None:
            work.session.add(Generation(member_id=member_id, generation=FIRST_GENERATION))
        credential = new_credential()
        work.session.add(
            Member(
                id=member_id,
                role=role,
                scope=scope,
                vaults=[vault],
                credential_hash=digest(credential),
                password_hash=password_hash,
                email=email,
                created=work.now,
                updated=work.now,
            )
        )
        work.session.add(Account(member_id=member_id, kind=kind, vault=vault, created=work.now))
        await work.session.flush()
        work.record(
            "account.create",
            actor=member_id,
            subject=member_id,
            scope=scope,
            vault=vault,
            reason=f"{kind} registration",
            object=f"member:{member_id}",
        )
        await nodes.place(
            work,
            vault,
            node.id,
            factor=self.settings.replication_factor,
            mode=self.settings.replication_mode,
        )
        return {
            "id": member_id,
            "role": role,
            "scope": scope,
            "vault": vault,
            "node": node.id,
            "mcp_url": node.resource,
            "credential": credential,
        }


async def _pending_count(session: AsyncSession, now: int) -> int:
    query = select(func.count()).select_from(PendingAccount).where(PendingAccount.expires > now)
    return (await session.scalar(query)) or 0


async def _new_vault(session: AsyncSession) -> str:
    """A random vault name no placement or account uses yet."""
    while True:
        name = "v-" + secrets.token_hex(8)
        taken = await session.get(VaultLease, name) or await session.scalar(
            select(Account.member_id).where(Account.vault == name)
        )
        if not taken:
            return name


async def choose_node(session: AsyncSession, now: int) -> Node:
    """The node a new vault goes to: among the nodes heard from in the last 10 minutes
    (all registered nodes if none was), the one holding the fewest vaults — those it
    reports and those placed on it — ties broken by id. 503 if no node is registered."""
    rows = (await session.scalars(select(Node).order_by(Node.id))).all()
    if not rows:
        raise UnavailableError("no vault node is registered to hold a new vault; try later")
    fresh = [n for n in rows if n.last_seen is not None and now - n.last_seen <= FRESH_NODE]
    placed: dict[str, set[str]] = {}
    for vault, node_id in (await session.execute(select(Copy.vault, Copy.node_id))).all():
        placed.setdefault(node_id, set()).add(vault)
    return min(fresh or rows, key=lambda n: (len(set(n.vaults) | placed.get(n.id, set())), n.id))
