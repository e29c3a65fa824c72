"""Keys derived from the center's secret (HKDF-SHA256), one per purpose.

The login and consent forms' CSRF tokens and the refresh-token successors are HMACs under these
keys: nothing secret is stored for them, and every center process sharing a database
derives the same keys. A new secret (key rotation) voids open login forms, and a
refresh retried across that restart counts as a replay.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tickets import parse_secret

FORM = b"login form"
CONSENT = b"consent form"
SUCCESSOR = b"refresh successor"


def derive(secret: str, purpose: bytes) -> bytes:
    """A 32-byte key for `purpose`, independent of the signing key and of each other."""
    hkdf = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"secondbrain-center oauth " + purpose
    )
    return hkdf.derive(parse_secret(secret))


def mac(key: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 over length-prefixed `parts`, base64url without padding."""
    message = b"".join(len(part).to_bytes(4, "big") + part for part in parts)
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
