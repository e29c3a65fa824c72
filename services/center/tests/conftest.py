"""Fixtures: every service test runs twice, on a SQLite file and on PostgreSQL.

PostgreSQL gets one database per test session (dropped at the end) and one schema per
test; `SECONDBRAIN_TEST_POSTGRES` points at the server (default: the local one). The
account and mail tests get a real SMTP server (aiosmtpd) whose certificate comes from a
throw-away CA made here with `cryptography`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
import uvicorn
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi import FastAPI

from center import testing as t
from center.app import create_app
from center.config import Settings
from center.console.testing import Browser
from center.oauth import testing as o

POSTGRES = os.environ.get("SECONDBRAIN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Database:
    """Where a test's center keeps its state: `url` None means SQLite in the data dir."""

    backend: str
    url: str | None = None
    schema: str | None = None


async def _admin(url: str, *statements: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def _with_database(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def postgres() -> Iterator[str | None]:
    """A fresh database for this session (asyncpg URL), or None if no server answers."""
    name = f"center_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(POSTGRES, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError):
        yield None
        return
    yield _with_database(POSTGRES, name)
    asyncio.run(_admin(POSTGRES, f'DROP DATABASE "{name}" WITH (FORCE)'))


@contextmanager
def _schema(postgres: str | None) -> Iterator[Database]:
    """A fresh schema in the session database, dropped afterwards."""
    if postgres is None:
        if os.environ.get("CI"):  # in CI a missing database is a failure, never a skip
            pytest.fail("PostgreSQL is not reachable; .ci/run should have started it")
        pytest.skip("PostgreSQL is not reachable; set SECONDBRAIN_TEST_POSTGRES")
    schema = f"t_{secrets.token_hex(6)}"
    asyncio.run(_admin(postgres, f"CREATE SCHEMA {schema}"))
    try:
        yield Database(
            "postgresql", postgres.replace("postgresql://", "postgresql+asyncpg://"), schema
        )
    finally:
        asyncio.run(_admin(postgres, f"DROP SCHEMA {schema} CASCADE"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, postgres: str | None) -> Iterator[Database]:
    """Each test that uses it runs twice: on a SQLite file, then on PostgreSQL."""
    if request.param == "sqlite":
        yield Database("sqlite")
        return
    with _schema(postgres) as database:
        yield database


@pytest.fixture
def postgres_database(postgres: str | None) -> Iterator[Database]:
    """A fresh schema on PostgreSQL only (tests of what only PostgreSQL has)."""
    with _schema(postgres) as database:
        yield database


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "center"


@pytest.fixture
def settings(data_dir: Path, database: Database) -> Settings:
    return t.settings(data_dir, database_url=database.url, database_schema=database.schema)


@pytest.fixture
def sqlite_settings(data_dir: Path) -> Settings:
    """For what only SQLite deployments have (audit.jsonl, the data-dir lock)."""
    return t.settings(data_dir)


@pytest.fixture
def postgres_settings(data_dir: Path, postgres: str | None) -> Iterator[Settings]:
    """For what only PostgreSQL deployments have (the audit table, shared databases)."""
    with _schema(postgres) as database:
        yield t.settings(data_dir, database_url=database.url, database_schema=database.schema)


@pytest.fixture
def clock() -> t.Clock:
    return t.Clock()


@pytest.fixture
def live(settings: Settings, clock: t.Clock) -> Iterator[t.Live]:
    """One running center for all examples of a property test."""
    with t.live(settings, clock) as running:
        yield running


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock) as running:
        yield running


@pytest_asyncio.fixture
async def center(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    """A center whose password hashing is fast: for the sign-in tests, which hash many."""
    async with t.running(settings, clock, passwords=o.fast_passwords()) as running:
        yield running


@pytest_asyncio.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(app) as http:
        yield http


@pytest.fixture
def server(settings: Settings) -> Iterator[str]:
    """A real center on 127.0.0.1 at a port chosen at start-up; yields its URL."""
    with serving(settings) as url:
        yield url


@pytest.fixture
def twin_servers(postgres_settings: Settings) -> Iterator[tuple[str, str]]:
    """Two centers on one PostgreSQL database, as a scaled-out deployment runs them."""
    with serving(postgres_settings) as first, serving(postgres_settings) as second:
        yield first, second


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """A center on 127.0.0.1 (uvicorn, a port chosen at start-up) until the block ends;
    two of them on one PostgreSQL database are two center processes as far as the
    database can tell."""
    quiet = settings.model_copy(update={"log_level": "error"})
    config = uvicorn.Config(
        create_app(quiet), host="127.0.0.1", port=0, log_config=None, lifespan="on"
    )
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not instance.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the center did not start")
        time.sleep(0.01)
    port = instance.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        instance.should_exit = True
        thread.join(timeout=30)


# ---------------------------------------------------------------- SMTP (accounts, mail)

SMTP_USER, SMTP_PASSWORD = "center", "test-only smtp password"


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, Any] | None = None
) -> x509.Certificate:
    """A CA certificate (no issuer: self-signed) or a 127.0.0.1 server one signed by it."""
    now = datetime.now(UTC)
    signer_name, signer_key = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(signer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
    else:
        names = [x509.IPAddress(IPv4Address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
    return builder.sign(signer_key, hashes.SHA256())


def _pem(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@dataclass(frozen=True)
class Pki:
    """A throw-away CA (`ca_file`), a server certificate it signed, and a server
    certificate from a stranger CA that nobody trusts."""

    ca_file: Path
    cert: Path
    key: Path
    stranger_cert: Path
    stranger_key: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    files: dict[str, Path] = {}
    for label in ("trusted", "stranger"):
        ca_key, server_key = (
            ec.generate_private_key(ec.SECP256R1()),
            ec.generate_private_key(ec.SECP256R1()),
        )
        ca = _certificate(f"{label} test CA", ca_key)
        server = _certificate("127.0.0.1", server_key, (f"{label} test CA", ca_key))
        pem = serialization.Encoding.PEM
        files[f"{label}_ca"] = _pem(folder / f"{label}-ca.pem", ca.public_bytes(pem))
        files[f"{label}_cert"] = _pem(folder / f"{label}.pem", server.public_bytes(pem))
        key_bytes = server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        files[f"{label}_key"] = _pem(folder / f"{label}.key", key_bytes)
    return Pki(
        files["trusted_ca"],
        files["trusted_cert"],
        files["trusted_key"],
        files["stranger_cert"],
        files["stranger_key"],
    )


@dataclass
class Smtp:
    """A real SMTP server (aiosmtpd) on 127.0.0.1 and what it received. `refuse` makes it
    answer 554 to every message."""

    port: int
    tls: str
    messages: list[EmailMessage] = field(default_factory=list)
    secured: list[bool] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    refuse: bool = False

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse:
            return "554 5.7.1 refused by the test server"
        implicit = server.transport.get_extra_info("ssl_object") is not None
        self.secured.append(session.ssl is not None or implicit)
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))  # type: ignore[arg-type]
        return "250 OK"

    def check_login(self, _s: Any, _session: Any, _e: Any, _m: str, data: Any) -> AuthResult:
        assert isinstance(data, LoginPassword)
        self.logins.append(data.login.decode())
        good = (data.login.decode(), data.password.decode()) == (SMTP_USER, SMTP_PASSWORD)
        return AuthResult(success=good, handled=False)  # handled=True would never answer


def free_port() -> int:
    import socket  # noqa: PLC0415 - only here

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def smtp_server(pki: Pki, tls: str = "starttls", *, trusted: bool = True) -> Iterator[Smtp]:
    """Serve SMTP with STARTTLS required, or implicit TLS (`tls="tls"`), until the block ends."""
    import ssl  # noqa: PLC0415 - only here

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert, key = (pki.cert, pki.key) if trusted else (pki.stranger_cert, pki.stranger_key)
    context.load_cert_chain(cert, key)
    inbox = Smtp(free_port(), tls)
    options: dict[str, Any] = {"authenticator": inbox.check_login, "auth_require_tls": True}
    if tls == "tls":
        options["ssl_context"] = context
    else:
        options.update(tls_context=context, require_starttls=True)
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port, **options)
    controller.start()
    try:
        yield inbox
    finally:
        controller.stop()


@pytest.fixture
def smtp_servers(pki: Pki) -> Iterator[Callable[..., Smtp]]:
    """Start SMTP servers: `smtp_servers("tls", trusted=False)`; all stop after the test."""
    with ExitStack() as stack:

        def start(tls: str = "starttls", *, trusted: bool = True) -> Smtp:
            return stack.enter_context(smtp_server(pki, tls, trusted=trusted))

        yield start


@pytest.fixture
def smtp(smtp_servers: Callable[..., Smtp]) -> Smtp:
    """An SMTP server requiring STARTTLS, with a certificate from the trusted test CA."""
    return smtp_servers()


@pytest.fixture
def mail_settings(data_dir: Path, database: Database, pki: Pki) -> Callable[..., Settings]:
    """Settings of a center registering by e-mail through a given `Smtp`, trusting only
    the test CA: `mail_settings(smtp, max_accounts=3)`."""

    def make(server: Smtp, **extra: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": database.url,
            "database_schema": database.schema,
            "registration": "email",
            "smtp_host": "127.0.0.1",
            "smtp_port": server.port,
            "smtp_tls": server.tls,
            "smtp_from": "Secondbrain <noreply@center.test>",
            "smtp_ca_file": pki.ca_file,
        }
        return t.settings(data_dir, **{**values, **extra})

    return make


@pytest_asyncio.fixture
async def browsers(app: FastAPI) -> AsyncIterator[Callable[[], Browser]]:
    """Console browsers over the module's `app`, each with its own cookie jar; all closed
    after the test."""
    opened: list[httpx.AsyncClient] = []

    def make() -> Browser:
        opened.append(t.client(app))
        return Browser(opened[-1])

    yield make
    for http in opened:
        await http.aclose()
