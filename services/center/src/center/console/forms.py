"""The console's one-time CSRF tokens and the posted form fields.

Every form carries `nonce.expiry.mac`: an HMAC (under a key derived from the center's
secret) over a fresh nonce, its expiry and the session it was rendered for, so a page
view stores nothing and a token from another session never checks. Posting spends the
nonce in the same table the login page's forms use: a token works once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import parse_qsl

from fastapi import Request

from center.oauth.authorize import spend
from center.oauth.keys import derive, mac
from center.store import Store

FORM_TTL = 3600
MAX_FIELDS = 32
PURPOSE = b"console form"
FORM_TYPE = "application/x-www-form-urlencoded"


class Forms:
    """Issues and spends the CSRF tokens of one center's console."""

    def __init__(self, secret: str) -> None:
        self.key = derive(secret, PURPOSE)

    def issue(self, binding: str, now: int) -> str:
        nonce, expires = secrets.token_urlsafe(16), str(now + FORM_TTL)
        return f"{nonce}.{expires}.{self._mac(nonce, expires, binding)}"

    def check(self, token: str, binding: str, now: int) -> tuple[str, int] | None:
        """(nonce digest, expiry) of a genuine, unexpired token for `binding`."""
        nonce, _, rest = token.partition(".")
        expires, _, signature = rest.partition(".")
        if not (nonce and expires.isdigit() and len(expires) <= 12 and signature):
            return None
        expected = self._mac(nonce, expires, binding)
        if not hmac.compare_digest(signature.encode(), expected.encode()) or int(expires) <= now:
            return None
        return hashlib.sha256(b"console\0" + nonce.encode()).hexdigest(), int(expires)

    async def spend(self, store: Store, token: str, binding: str) -> bool:
        """True once for a genuine token of this binding; False if forged, stale or spent."""
        checked = self.check(token, binding, store.now())
        if checked is None:
            return False
        async with store.change() as work:
            return await spend(work, *checked)

    def _mac(self, nonce: str, expires: str, binding: str) -> str:
        return mac(self.key, nonce.encode(), expires.encode(), binding.encode())


async def fields(request: Request) -> dict[str, list[str]] | None:
    """The posted urlencoded fields (a name may repeat); None if the body is not a form."""
    kind = request.headers.get("content-type", "").split(";", maxsplit=1)[0].strip().lower()
    if kind != FORM_TYPE:
        return None
    try:
        pairs = parse_qsl(
            (await request.body()).decode("utf-8"),
            keep_blank_values=True,
            max_num_fields=MAX_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        return None
    found: dict[str, list[str]] = {}
    for name, value in pairs:
        found.setdefault(name, []).append(value)
    return found
