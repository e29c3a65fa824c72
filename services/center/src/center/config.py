"""The center's settings, read from `SECONDBRAIN_CENTER_*` environment variables only.

Secrets (the Ed25519 signing secret and the operator's admin token) are accepted from the
environment or from the caller constructing `Settings`, never from argv or a file in the
repository; no rejected value is ever echoed in an error.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from center.errors import ConfigError
from tickets import SecretError, SigningKey, parse_secret

ENV_PREFIX = "SECONDBRAIN_CENTER_"
MIN_ADMIN_TOKEN = 32
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
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
    max_body_bytes: int = Field(65536, ge=1024, le=1 << 24, description="Request body limit")
    log_level: str = Field("info", description="debug, info, warning or error")

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
        return self

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
