"""A node's offline verification of an access token, in the order docs/design.md#tokens fixes.

Every check fails closed and raises TokenError with one machine-readable reason: the
node answers the same 401 to all of them and logs the reason. Only a missing permission
for a particular tool is a 403 (InsufficientScopeError, from `Ticket.require`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

from tickets import jws
from tickets.claims import ALL_VAULTS, Claims, Kind
from tickets.errors import ClaimsError, InsufficientScopeError, Reason, TokenError
from tickets.keys import KeySet, PublicKey
from tickets.reach import NO_PATHS, Paths, Reach
from tickets.revocation import DEFAULT_MAX_STALE, RevocationState
from tickets.scopes import Permissions, Role, ToolKind, needed, role_cap

DEFAULT_SKEW = 60
REFRESH_INTERVAL = 30.0
SIGNATURE_CACHE = 4096
"""Tokens whose signature and JSON were checked, remembered with their claims: an agent
sends the same token with every call, and an Ed25519 verification costs a fifth of a
millisecond. Everything that can change — the key set, the time window, the revocation
snapshot and its staleness — is still checked on every call."""
Refresh = Callable[[], KeySet | None]
"""Returns a fresh key set (the node fetched the JWKS) or None if it could not; it must
not raise. The verifier calls it at most once per `refresh_interval`."""


def _refuse(reason: Reason, detail: str) -> NoReturn:
    raise TokenError(reason, detail)


def canonical_resource(url: str) -> str:
    """Scheme and host lowercased, no trailing slash: `aud` and the node's URL compare so."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}{query}"


@dataclass(frozen=True)
class Ticket:
    """A verified token, as the node's tools see it.

    `granted` is the token's scope capped by its role; `permissions` is what may be used
    now — only `read` of it while the revocation snapshot is stale (`stale`)."""

    principal: str
    permissions: Permissions
    granted: Permissions
    vaults: tuple[str, ...]
    grant_id: str | None
    chain: tuple[str, ...]
    role: Role
    client_id: str | None
    jti: str
    exp: int
    kind: Kind
    kid: str
    stale: bool = False
    paths: Paths = NO_PATHS
    aud: tuple[str, ...] = ()
    """The token's audiences, canonical (a node forwards a call only for a token that names
    the deployment's one address)."""

    def allows_vault(self, vault: str) -> bool:
        return self.vaults == (ALL_VAULTS,) or vault in self.vaults

    def reach(self, vault: str) -> Reach | None:
        """The token's path rules in `vault`: None when it reaches the whole vault."""
        return self.paths.reach(vault)

    def allows(self, kind: ToolKind, *, displaces: bool = False) -> bool:
        """Whether this token may now call a tool of `kind` — the one answer the node gives
        (`tools/list`, dispatch and `require` all ask it); `displaces` marks an overwrite
        that replaces an existing note or attachment."""
        return needed(kind, displaces=displaces) <= self.permissions

    @property
    def sees_content(self) -> bool:
        """False for a write-only caller: it may only add, and is told nothing of what is
        there (docs/security.md)."""
        return "read" in self.permissions

    def require(self, kind: ToolKind, *, displaces: bool = False) -> None:
        """Pass, or raise: TokenError("stale") if only staleness withholds the permission
        (answer 401), InsufficientScopeError if the token never had it (answer 403)."""
        if self.allows(kind, displaces=displaces):
            return
        need = needed(kind, displaces=displaces)
        if self.stale and need <= self.granted:
            _refuse("stale", "revocation snapshot too old for writes; retry when it is fresh")
        raise InsufficientScopeError(need, self.permissions)


class Verifier:
    """Verifies access tokens for one node (`audience`) against one issuer.

    `deployment`, when set, is the deployment's one MCP address, accepted as audience
    besides the node's own (it may be set later: the node learns it from the center).
    `revocation` is the node's live RevocationState; `read_when_stale` decides whether
    reads continue once its snapshot is older than `max_stale` (writes never do)."""

    def __init__(
        self,
        *,
        keys: KeySet,
        issuer: str,
        audience: str,
        revocation: RevocationState,
        deployment: str | None = None,
        refresh: Refresh | None = None,
        refresh_interval: float = REFRESH_INTERVAL,
        max_stale: float = DEFAULT_MAX_STALE,
        read_when_stale: bool = False,
        skew: int = DEFAULT_SKEW,
        max_bytes: int = jws.MAX_TOKEN_BYTES,
        typ: str = jws.ACCESS_TOKEN_TYP,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = canonical_resource(audience)
        self._deployment = canonical_resource(deployment) if deployment else None
        self.revocation = revocation
        self.refresh = refresh
        self.refresh_interval = refresh_interval
        self.max_stale = max_stale
        self.read_when_stale = read_when_stale
        self.skew = skew
        self.max_bytes = max_bytes
        self.typ = typ
        self.clock = clock
        self._last_refresh: float | None = None
        self._checked: dict[str, tuple[Claims, str, PublicKey]] = {}
        self._checked_lock = threading.Lock()

    def verify(self, token: str, *, now: float | None = None) -> Ticket:
        """Run every check in order; return the Ticket or raise TokenError(reason)."""
        now = self.clock() if now is None else now
        header = jws.read_header(token, max_bytes=self.max_bytes)
        if not jws.typ_matches(header.typ, self.typ):
            _refuse("bad_typ", f"typ {header.typ!r}, expected {self.typ!r}")
        if header.alg != jws.ALG:
            _refuse("bad_alg", f"alg {header.alg!r}, only {jws.ALG} is accepted")
        key = self._key(header.kid, now)
        claims = self._signed_claims(token, header.kid, key)
        self._check_claims(claims, now)
        stale = self._check_revocation(claims, header.kid, now)
        return _ticket(claims, header.kid, stale=stale)

    def needs_no_fetch(self, token: str) -> bool:
        """True when verifying `token` cannot fetch keys (its `kid` is known, or its header
        is refused anyway): the caller may then verify it without leaving its thread."""
        try:
            kid = jws.read_header(token, max_bytes=self.max_bytes).kid
        except TokenError:
            return True
        return self.keys.get(kid, self.clock()) is not None

    def _signed_claims(self, token: str, kid: str, key: PublicKey) -> Claims:
        """The claims of a token signed by `key`: from the cache when this very token was
        checked with this very key object (a refreshed key set starts afresh), else by
        verifying the signature and reading the payload strictly."""
        known = self._checked.get(token)
        if known is not None and known[1] == kid and known[2] is key:
            return known[0]
        payload = jws.loads(jws.verify_signature(token, key, max_bytes=self.max_bytes))
        claims = _claims(payload)
        with self._checked_lock:
            if len(self._checked) >= SIGNATURE_CACHE:
                del self._checked[next(iter(self._checked))]
            self._checked[token] = (claims, kid, key)
        return claims

    def _key(self, kid: str, now: float) -> PublicKey:
        key = self.keys.get(kid, now)
        if key is None and kid and self._may_refresh(now):
            assert self.refresh is not None
            fresh = self.refresh()
            if fresh is not None:
                self.keys = fresh
                key = self.keys.get(kid, now)
        if key is None:
            _refuse("unknown_kid", f"kid {kid!r} is not in the key set")
        return key

    def _may_refresh(self, now: float) -> bool:
        if self.refresh is None:
            return False
        last = self._last_refresh
        if last is not None and now - last < self.refresh_interval:
            return False
        self._last_refresh = now
        return True

    def _check_claims(self, claims: Claims, now: float) -> None:
        if claims.iss != self.issuer:
            _refuse("bad_iss", f"issuer {claims.iss!r}")
        named = {canonical_resource(a) for a in claims.aud}
        if self.audience not in named and not self._names_deployment(named):
            _refuse("bad_aud", f"audience {list(claims.aud)!r} does not name this node")
        if max(claims.nbf, claims.iat) > now + self.skew:
            _refuse("not_yet_valid", f"nbf {claims.nbf}, iat {claims.iat}, now {int(now)}")
        if claims.exp + self.skew <= now:
            _refuse("expired", f"exp {claims.exp}, now {int(now)}")
        if problem := claims.lifetime_problem():
            _refuse("lifetime", problem)
        if problem := claims.depth_problem():
            _refuse("depth", problem)

    @property
    def deployment(self) -> str | None:
        return self._deployment

    @deployment.setter
    def deployment(self, url: str | None) -> None:
        self._deployment = canonical_resource(url) if url else None

    def _names_deployment(self, named: set[str]) -> bool:
        return self._deployment is not None and self._deployment in named

    def _check_revocation(self, claims: Claims, kid: str, now: float) -> bool:
        snapshot = self.revocation.snapshot
        if snapshot is None:
            _refuse("stale", "no revocation snapshot received yet")
        refusal = snapshot.refusal(claims, kid)
        if refusal is not None:
            _refuse(*refusal)
        stale = self.revocation.is_stale(self.max_stale, now)
        if stale and not self.read_when_stale:
            _refuse("stale", f"revocation snapshot older than {self.max_stale} s")
        return stale


def _claims(payload: Mapping[str, Any]) -> Claims:
    try:
        return Claims.from_payload(payload)
    except ClaimsError as exc:
        raise TokenError("bad_claims", exc.message) from exc


def _ticket(claims: Claims, kid: str, *, stale: bool) -> Ticket:
    granted = claims.scope & role_cap(claims.role)
    return Ticket(
        principal=claims.sub,
        permissions=granted & {"read"} if stale else granted,
        granted=granted,
        vaults=claims.vaults,
        grant_id=claims.gid,
        chain=claims.chain,
        role=claims.role,
        client_id=claims.client_id,
        jti=claims.jti,
        exp=claims.exp,
        kind=claims.kind,
        kid=kid,
        stale=stale,
        paths=claims.paths,
        aud=tuple(canonical_resource(url) for url in claims.aud),
    )
