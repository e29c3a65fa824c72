"""Helpers for tests that drive the OAuth flow (here and in other packages' e2e tests).

For tests only: the fast password hasher below must never protect a real password.
A test sets up a member with a password and a node resource through the operator API
(`POST /v1/members` with `password`, `POST /v1/nodes` with `resource`), registers a
client, then signs in through the login page the way a browser would, and allows (or
denies, or narrows) on the consent page that follows.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import ipaddress
import json
import secrets
import ssl
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from argon2 import PasswordHasher, Type
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from center import testing as t
from center.passwords import Passwords

REDIRECT = "http://127.0.0.1:33418/callback"
PASSWORD = "correct horse battery staple"  # noqa: S105 - public, for tests only
NODE_ID = "node-a"
Params = tuple[tuple[str, str], ...]


def fast_passwords() -> Passwords:
    """argon2id at its cheapest, so a test can sign in many times quickly."""
    return Passwords(PasswordHasher(time_cost=1, memory_cost=64, parallelism=1, type=Type.ID))


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str


def pkce() -> Pkce:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return Pkce(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii"))


async def add_node(
    http: httpx.AsyncClient, resource: str = t.RESOURCE, node_id: str = NODE_ID
) -> str:
    """Register a node, which makes `resource` a known RFC 8707 resource; its credential."""
    body = {"id": node_id, "resource": resource}
    response = await http.post("/v1/nodes", json=body, headers=t.ADMIN)
    assert response.status_code == 201, response.text
    credential: str = response.json()["credential"]
    return credential


async def add_member(
    http: httpx.AsyncClient, member_id: str = "alice", password: str = PASSWORD, **fields: Any
) -> None:
    """A member who can sign in on the login page (editor of vault `team` by default)."""
    fields.setdefault("role", "editor")
    fields.setdefault("scope", "read_write")
    await t.add_member(http, member_id, password=password, **fields)


async def register(http: httpx.AsyncClient, redirect_uris: Sequence[str] = (REDIRECT,)) -> str:
    """Register a public client; its client_id."""
    body = {"client_name": "Test Client", "redirect_uris": list(redirect_uris)}
    response = await http.post("/register", json=body)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.inputs: dict[str, str] = {}
        self.choices: dict[str, list[tuple[str, bool]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = values.get("action")
        elif tag == "input" and values.get("type") in {"radio", "checkbox"}:
            listed = self.choices.setdefault(values["name"], [])
            listed.append((values.get("value", ""), "checked" in values))
        elif tag == "input" and "name" in values:
            self.inputs[values["name"]] = values.get("value", "")


@dataclass(frozen=True)
class LoginForm:
    """The login page's form: where it posts (absolute) and its CSRF token."""

    action: str
    csrf: str


def login_form(page: httpx.Response) -> LoginForm:
    parser = _Form()
    parser.feed(page.text)
    assert parser.action is not None, page.text
    return LoginForm(urljoin(str(page.url), parser.action), parser.inputs["csrf"])


@dataclass(frozen=True)
class ConsentForm:
    """The consent page's form: where it posts, its hidden fields, and the scopes and
    vaults offered (value, checked)."""

    action: str
    hidden: dict[str, str]
    scopes: list[tuple[str, bool]]
    vaults: list[tuple[str, bool]]

    def fields(
        self, decision: str = "allow", scope: str | None = None, vaults: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """What a browser posts: the hidden fields, the decision and the choices (those
        checked on the page unless given)."""
        chosen = scope or next(value for value, checked in self.scopes if checked)
        ticked = [v for v, checked in self.vaults if checked] if vaults is None else vaults
        return [
            *self.hidden.items(),
            ("decision", decision),
            ("scope", chosen),
            *(("vault", vault) for vault in ticked),
        ]


def consent_form(page: httpx.Response) -> ConsentForm | None:
    """The consent form of `page`, or None if the page is not the consent page."""
    parser = _Form()
    parser.feed(page.text)
    if parser.action is None or "consent" not in parser.inputs:
        return None
    return ConsentForm(
        urljoin(str(page.url), parser.action),
        {name: parser.inputs[name] for name in ("consent", "member")},
        parser.choices.get("scope", []),
        parser.choices.get("vault", []),
    )


def authorize_params(
    client_id: str,
    proof: Pkce,
    *,
    redirect_uri: str = REDIRECT,
    state: str = "xyz",
    resource: Sequence[str] = (t.RESOURCE,),
    scope: str | None = None,
) -> Params:
    params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("state", state),
        ("code_challenge", proof.challenge),
        ("code_challenge_method", "S256"),
    ]
    params.extend(("resource", url) for url in resource)
    if scope is not None:
        params.append(("scope", scope))
    return tuple(params)


async def sign_in(
    http: httpx.AsyncClient,
    params: Params,
    username: str = "alice",
    password: str = PASSWORD,
    *,
    decision: str = "allow",
    scope: str | None = None,
    vaults: Sequence[str] | None = None,
) -> httpx.Response:
    """Open the login page, post the form and, if the consent page follows, answer it
    (`decision`, narrowed to `scope` and `vaults` if given); the response to the last post."""
    page = await http.get("/authorize", params=params)
    assert page.status_code == 200, page.text
    form = login_form(page)
    body = {"username": username, "password": password, "csrf": form.csrf}
    posted = await http.post(form.action, data=body)
    return await answer_consent(http, posted, decision, scope=scope, vaults=vaults)


async def answer_consent(
    http: httpx.AsyncClient,
    page: httpx.Response,
    decision: str = "allow",
    *,
    scope: str | None = None,
    vaults: Sequence[str] | None = None,
) -> httpx.Response:
    """Answer the consent page if `page` is one (else `page` itself)."""
    asked = consent_form(page) if page.status_code == 200 else None
    if asked is None:
        return page
    return await http.post(
        asked.action,
        content=urlencode(asked.fields(decision, scope, vaults)),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def redirect_params(response: httpx.Response) -> dict[str, str]:
    """The query of a redirect back to the client, one value per name."""
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["location"]).query)
    return {name: values[0] for name, values in query.items()}


async def exchange(
    http: httpx.AsyncClient, client_id: str, code: str, proof: Pkce, **extra: str
) -> httpx.Response:
    body = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": proof.verifier,
        **extra,
    }
    return await http.post("/token", data=body)


async def refresh(
    http: httpx.AsyncClient, client_id: str, refresh_token: str, **extra: str
) -> httpx.Response:
    body = {
        "grant_type": "refresh_token",
        "client_id": client_id,
        "refresh_token": refresh_token,
        **extra,
    }
    return await http.post("/token", data=body)


async def code_for(http: httpx.AsyncClient, client_id: str, proof: Pkce, **options: Any) -> str:
    """Sign `alice` in for `client_id`; the authorization code the redirect carries."""
    response = await sign_in(http, authorize_params(client_id, proof, **options))
    return redirect_params(response)["code"]


def make_ca(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for `host` and localhost, as PEM files:
    (CA, certificate, key). For tests only."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, public: Any, issuer: str, ca: bool) -> x509.CertificateBuilder:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        issued = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])
        return (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issued)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )

    ca = build("secondbrain test CA", ca_key.public_key(), "secondbrain test CA", True)
    ca = ca.add_extension(
        x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
    )
    ca_cert = ca.sign(ca_key, hashes.SHA256())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    leaf = build(host, key.public_key(), "secondbrain test CA", False)
    leaf = leaf.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = leaf.sign(ca_key, hashes.SHA256())
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class Answer:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    undeclared: bool = False
    """Send no Content-Length: the body ends when the connection closes."""
    hold: threading.Event | None = None
    """Answer only once this is set (a server that stalls until the test releases it)."""


@dataclass
class DocumentServer:
    """An https server on 127.0.0.1 answering GETs from `answers` (by path) and counting
    them in `hits`: where tests publish client metadata documents."""

    ca_file: Path
    port: int
    answers: dict[str, Answer] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def publish(self, path: str, document: Any, **headers: str) -> str:
        """Serve `document` as JSON at `path`; its URL."""
        body = json.dumps(document).encode() if not isinstance(document, bytes) else document
        self.answers[path] = Answer(body, headers={"Content-Type": "application/json", **headers})
        return self.url(path)


@contextlib.contextmanager
def document_server(folder: Path) -> Iterator[DocumentServer]:
    ca_file, cert_file, key_file = make_ca(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    state = DocumentServer(ca_file, 0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            state.hits[path] = state.hits.get(path, 0) + 1
            answer = state.answers.get(path, Answer(b"not found", 404))
            if answer.hold is not None:
                answer.hold.wait(60)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if not answer.undeclared:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
