"""The center's settings, read from `SECONDBRAIN_CENTER_*` environment variables only.

Secrets (the Ed25519 signing secret and the operator's admin token) are accepted from the
environment or from the caller constructing `Settings`, never from argv or a file in the
repository; no rejected value is ever echoed in an error.
"""

from __future__ import annotations

import ipaddress
import re
from email.utils import parseaddr
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from center.errors import ConfigError
from tickets import ScopeError, SecretError, SigningKey, parse_role, parse_scope, parse_secret
from tickets.scopes import EXPANSION, role_cap

ENV_PREFIX = "SECONDBRAIN_CENTER_"
MIN_ADMIN_TOKEN = 32
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_HOST = re.compile(r"[A-Za-z0-9.:\[\]-]{1,253}")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
MAILBOX = re.compile(rf"[A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]{{1,64}}@{_LABEL}(?:\.{_LABEL})+")
"""An ASCII mailbox address (registration takes ASCII addresses only)."""
_RATE = re.compile(r"(?P<count>[0-9]{1,9})/(?P<unit>[smh])")
_RATE_UNITS = {"s": 1, "m": 60, "h": 3600}
_DRIVERS = {
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "sqlite": "sqlite+aiosqlite",
    "postgresql+asyncpg": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_public_url(url: str) -> str:
    """An https URL, or http on loopback; no userinfo, query or fragment; no trailing /."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("must not carry user info, a query or a fragment")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError("plain http is only allowed on loopback; use https")
    return url.rstrip("/")


def check_account_authority(role: str, scope: str) -> None:
    """A role and a scope a new account may get: known, and the scope within the role."""
    try:
        wire, named = parse_scope(scope), parse_role(role)
    except ScopeError:
        raise ValueError("account_role/account_scope: unknown role or scope") from None
    if not EXPANSION[wire] <= role_cap(named):
        raise ValueError(f"account_scope {wire} exceeds the cap of account_role {named}")


def _mailbox(text: str) -> bool:
    _name, address = parseaddr(text)
    return "\n" not in text and "\r" not in text and bool(MAILBOX.fullmatch(address))


def parse_rate(text: str) -> tuple[int, int]:
    """`<count>/<unit>` (unit s, m or h) as (count, window in seconds); count positive."""
    match = _RATE.fullmatch(text.strip())
    if not match or int(match["count"]) < 1:
        raise ValueError("use <count>/<unit> with a positive count and unit s, m or h (10/m)")
    return int(match["count"]), _RATE_UNITS[match["unit"]]


def parse_proxies(text: str) -> list[str]:
    """Comma-separated IP addresses and networks (`10.0.0.0/8`), each in its normal form;
    empty for none. A wildcard is refused: it would let any client name its own address."""
    proxies = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            proxy = ipaddress.ip_network(item) if "/" in item else ipaddress.ip_address(item)
        except ValueError:
            raise ValueError(
                "use comma-separated IP addresses or networks with host bits zero"
                " (127.0.0.1,10.89.0.0/24); a wildcard or a host name is not accepted"
            ) from None
        proxies.append(str(proxy))
    return proxies


class Settings(BaseSettings):
    """Every setting of a center. Construct directly in tests; `load_settings` in services."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=None,
        extra="forbid",
        frozen=True,
        hide_input_in_errors=True,
    )

    data_dir: Path = Field(Path("data/center"), description="Folder for center.db and audit.jsonl")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default SQLite in data_dir")
    database_schema: str | None = Field(None, description="PostgreSQL schema for every table")
    secret: SecretStr = Field(description="Ed25519 signing secret: 32 bytes, base64url or hex")
    admin_token: SecretStr | None = Field(None, description="Operator bearer (>= 32 characters)")
    issuer: str = Field("http://127.0.0.1:2021", description="The center's public URL (`iss`)")
    host: str = Field("127.0.0.1", description="Address `serve` binds")
    port: int = Field(2021, ge=1, le=65535, description="Port `serve` binds")
    trusted_proxies: str = Field(
        "127.0.0.1,::1",
        description="Comma-separated addresses or networks of the proxies whose "
        "X-Forwarded-For names the client; empty: believe no one",
    )
    max_body_bytes: int = Field(65536, ge=1024, le=1 << 24, description="Request body limit")
    mcp_url: str | None = Field(
        None,
        description="The deployment's one MCP address, routed to every node: named in the "
        "audience of every token, and sent to nodes in the heartbeat answer",
    )
    oauth_resources: tuple[str, ...] = Field(
        (), description="Resource URLs OAuth tokens may name besides registered nodes' (JSON list)"
    )
    oauth_client_metadata_hosts: tuple[str, ...] = Field(
        (),
        description="Hosts whose client metadata documents may be fetched from loopback or "
        "private addresses (JSON list); every other host must resolve to public addresses only",
    )
    oauth_client_metadata_ca_file: Path | None = Field(
        None, description="PEM CAs to trust for client metadata documents instead of the system's"
    )
    oauth_access_minutes: int = Field(60, ge=1, le=60, description="OAuth access token lifetime")
    oauth_refresh_days: int = Field(
        30, ge=1, le=365, description="OAuth refresh token lifetime; each rotation restarts it"
    )
    login_rate_limit: str = Field(
        "10/m", description="Failed logins per source IP: <count>/<s|m|h>, refilled continuously"
    )
    oauth_document_rate_limit: str = Field(
        "20/m", description="Client metadata document fetches per source address (IPv6: per /64)"
    )
    oauth_document_host_rate_limit: str = Field(
        "60/m", description="Fetches of client metadata documents not yet known, per host"
    )
    console_idle_minutes: int = Field(
        30, ge=1, le=1440, description="A console session ends after this long without a request"
    )
    console_hours: int = Field(
        12, ge=1, le=168, description="A console session ends this long after sign-in, at most"
    )
    registration: Literal["off", "email", "username"] = Field(
        "off", description="Self-service accounts: off, email (verified over SMTP) or username"
    )
    max_accounts: int = Field(10_000, ge=0, le=1_000_000, description="Accounts registration makes")
    account_role: str = Field("owner", description="Role of a new account in its own vault")
    account_scope: str = Field("allow_all", description="Scope of a new account (within its role)")
    smtp_host: str | None = Field(None, max_length=253, description="Mail server for e-mail mode")
    smtp_port: int = Field(587, ge=1, le=65535, description="587 for starttls, 465 for tls")
    smtp_tls: Literal["starttls", "tls"] = Field(
        "starttls", description="starttls (required) or tls (implicit); certificates are checked"
    )
    smtp_from: str | None = Field(None, max_length=320, description="From: of verification mails")
    smtp_username: str | None = Field(None, max_length=320, description="SMTP login, if any")
    smtp_password: SecretStr | None = Field(None, description="SMTP password (environment only)")
    smtp_password_file: Path | None = Field(None, description="File holding the SMTP password")
    smtp_ca_file: Path | None = Field(None, description="PEM CAs to trust instead of the system's")
    smtp_timeout: float = Field(10.0, gt=0, le=120, description="Seconds per SMTP operation")
    log_level: str = Field("info", description="debug, info, warning or error")
    shutdown_drain: float = Field(
        0.0,
        ge=0,
        le=60,
        description="Seconds between SIGTERM and shutdown in which /readyz answers 503 and "
        "requests are still served, so a proxy's health check sends new ones elsewhere first",
    )
    lease_ttl: int = Field(10, ge=2, le=300, description="Seconds a primary's lease lasts")
    lease_renew: int = Field(
        2, ge=1, le=60, description="Seconds between a node's lease renewals (told to nodes)"
    )
    lease_grace: int = Field(
        2, ge=0, le=300, description="Seconds past a lease's expiry before a replica is promoted"
    )
    replication_factor: int = Field(
        2, ge=1, le=9, description="Copies of a new vault, capped by the nodes there are"
    )
    replication_mode: Literal["sync", "async"] = Field(
        "sync", description="sync: a write waits for the replicas in sync; async: it does not"
    )

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        try:
            parse_secret(value.get_secret_value())
        except SecretError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("admin_token")
    @classmethod
    def _admin_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().strip()) < MIN_ADMIN_TOKEN:
            raise ValueError(f"must have at least {MIN_ADMIN_TOKEN} characters of randomness")
        return value

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        return check_public_url(value)

    @field_validator("mcp_url")
    @classmethod
    def _mcp_url(cls, value: str | None) -> str | None:
        return check_public_url(value) if value else None

    @property
    def vouched_resources(self) -> tuple[str, ...]:
        """Resources a token may name besides registered nodes': the one address and
        `oauth_resources`."""
        return (self.mcp_url, *self.oauth_resources) if self.mcp_url else self.oauth_resources

    @field_validator("oauth_resources")
    @classmethod
    def _oauth_resources(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_public_url(url) for url in value)

    @field_validator(
        "login_rate_limit", "oauth_document_rate_limit", "oauth_document_host_rate_limit"
    )
    @classmethod
    def _rate_limit(cls, value: str) -> str:
        parse_rate(value)
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        return ",".join(parse_proxies(value))

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        scheme, sep, rest = value.partition("://")
        if not sep or scheme not in _DRIVERS:
            raise ValueError("use sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER@HOST/DB")
        return f"{_DRIVERS[scheme]}://{rest}"

    @field_validator("database_schema")
    @classmethod
    def _database_schema(cls, value: str | None) -> str | None:
        if value is not None and not _SCHEMA.fullmatch(value):
            raise ValueError("must be 1-63 characters of a-z, 0-9 and _, not starting with a digit")
        return value

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        if value.lower() not in {"debug", "info", "warning", "error"}:
            raise ValueError("use debug, info, warning or error")
        return value.lower()

    @model_validator(mode="after")
    def _distinct(self) -> Settings:
        token = self.admin_token.get_secret_value() if self.admin_token else None
        if token is not None and token == self.secret.get_secret_value():
            raise ValueError("admin_token and secret must be different values")
        if self.database_schema and self.backend != "postgresql":
            raise ValueError("database_schema applies to PostgreSQL only")
        if self.lease_renew * 2 > self.lease_ttl:
            raise ValueError("lease_renew must be at most half of lease_ttl")
        return self

    @model_validator(mode="after")
    def _accounts(self) -> Settings:
        check_account_authority(self.account_role, self.account_scope)
        if self.registration == "email" and not (self.smtp_host and self.smtp_from):
            raise ValueError("registration=email needs smtp_host and smtp_from")
        if self.smtp_password is not None and self.smtp_password_file is not None:
            raise ValueError("set smtp_password or smtp_password_file, not both")
        if (self.smtp_password or self.smtp_password_file) and not self.smtp_username:
            raise ValueError("an SMTP password needs smtp_username")
        if self.smtp_host is not None and not _HOST.fullmatch(self.smtp_host):
            raise ValueError("smtp_host must be a host name or an IP address")
        if self.smtp_from is not None and not _mailbox(self.smtp_from):
            raise ValueError('smtp_from must be an address, e.g. "Secondbrain <noreply@host>"')
        for path in (self.smtp_ca_file, self.smtp_password_file):
            if path is not None and not path.is_file():
                raise ValueError(f"{path.name} is not a readable file")
        return self

    def smtp_secret(self) -> str | None:
        """The SMTP password, from the environment or from `smtp_password_file`."""
        if self.smtp_password is not None:
            return self.smtp_password.get_secret_value()
        if self.smtp_password_file is not None:
            return self.smtp_password_file.read_text(encoding="utf-8").strip("\r\n")
        return None

    @property
    def url(self) -> str:
        """The database URL actually used."""
        if self.database_url is not None:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir.resolve() / 'center.db'}"

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`."""
        return "postgresql" if self.url.startswith("postgresql") else "sqlite"

    def signing_key(self) -> SigningKey:
        return SigningKey.from_secret(self.secret.get_secret_value())

    def admin_token_value(self) -> str | None:
        return self.admin_token.get_secret_value() if self.admin_token else None


def env_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


def load_settings(**overrides: Any) -> Settings:
    """Read the settings; ConfigError names each bad variable without showing its value."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_input=False, include_url=False, include_context=False):
            field = ".".join(str(part) for part in error["loc"]) or "settings"
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{env_name(field) if error['loc'] else field}: {message}")
        raise ConfigError(problems) from None
