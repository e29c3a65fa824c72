"""What one running center app keeps for OAuth: its metadata, derived keys, the login
helper, the client metadata fetcher and the rate limits (kept in the database, so every
center process on it shares them)."""

from __future__ import annotations

from center.config import parse_rate
from center.oauth import keys, metadata
from center.oauth.authorize import FormTokens
from center.oauth.documents import Fetcher
from center.oauth.login import Login
from center.oauth.token import Minter
from center.runtime import Center
from center.throttles import Bucket

REGISTRATIONS = (20, 3600)
"""Client registrations per source IP: 20 an hour (docs/design.md#client-registration)."""


class OAuthServer:
    def __init__(self, center: Center) -> None:
        settings = center.settings
        secret = settings.secret.get_secret_value()
        self.center = center
        self.metadata = metadata.document(settings.issuer)
        self.suffixes = metadata.suffixes(settings.issuer)
        self.forms = FormTokens(keys.derive(secret, keys.FORM))
        self.consents = FormTokens(keys.derive(secret, keys.CONSENT))
        self.minter = Minter(
            keyring=center.keyring,
            issuer=settings.issuer,
            configured=settings.vouched_resources,
            access_seconds=settings.oauth_access_minutes * 60,
            refresh_seconds=settings.oauth_refresh_days * 86400,
            successor_key=keys.derive(secret, keys.SUCCESSOR),
        )
        self.login = Login(center.passwords)
        self.documents = Fetcher(
            settings.oauth_client_metadata_hosts, settings.oauth_client_metadata_ca_file
        )
        self.login_limit = Bucket("oauth.login", *parse_rate(settings.login_rate_limit))
        self.register_limit = Bucket("oauth.register", *REGISTRATIONS)
        self.document_limit = Bucket(
            "oauth.document", *parse_rate(settings.oauth_document_rate_limit)
        )
        self.document_host_limit = Bucket(
            "oauth.document_host", *parse_rate(settings.oauth_document_host_rate_limit)
        )
