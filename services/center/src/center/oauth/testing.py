"""Helpers for tests that drive the OAuth flow (here and in other packages' e2e tests).

For tests only: the fast password hasher below must never protect a real password.
A test sets up a member with a password and a node resource through the operator API
(`POST /v1/members` with `password`, `POST /v1/nodes` with `resource`), registers a
client, then signs in through the login page the way a browser would.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from argon2 import PasswordHasher, Type

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

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = values.get("action")
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
) -> httpx.Response:
    """Open the login page and post the form; the response to the post."""
    page = await http.get("/authorize", params=params)
    assert page.status_code == 200, page.text
    form = login_form(page)
    body = {"username": username, "password": password, "csrf": form.csrf}
    return await http.post(form.action, data=body)


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
