"""Test helpers other packages reuse: a fake clock, test settings, and a center in process.

For tests only. The secret and admin token here are public and must never protect
anything real.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import itertools
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx
from fastapi import FastAPI

from center.app import create_app
from center.config import Settings
from center.passwords import Passwords
from tickets import KeySet, RevocationState, Verifier

SECRET: Final = hashlib.sha256(b"secondbrain center TEST-ONLY secret").hexdigest()
ADMIN_TOKEN: Final = "test-only-admin-token-" + hashlib.sha256(b"admin").hexdigest()[:32]
ISSUER: Final = "https://center.test"
RESOURCE: Final = "https://node-a.test/mcp"
T = TypeVar("T")
START: Final = 1_767_225_600
"""2026-01-01T00:00:00Z, where every test clock starts."""


class Clock:
    """A settable clock; `advance` moves it forward."""

    def __init__(self, now: float = START) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for a test center under `data_dir` (SQLite unless `database_url` is given)."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "secret": SECRET,
        "admin_token": ADMIN_TOKEN,
        "issuer": ISSUER,
        "oauth_resources": (RESOURCE,),  # the test node's URL, vouched for without a node
    }
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def running(
    config: Settings, clock: Clock | None = None, passwords: Passwords | None = None
) -> AsyncIterator[FastAPI]:
    """A center app with its lifespan entered (httpx's ASGITransport does not run it)."""
    app = create_app(config, clock=clock or Clock(), passwords=passwords)
    async with app.router.lifespan_context(app):
        yield app


@dataclass
class Live:
    """A running center driven from synchronous code (a hypothesis test): `run` awaits a
    coroutine on the center's own loop; `fresh` makes names no earlier example used."""

    runner: asyncio.Runner
    client: httpx.AsyncClient
    clock: Clock
    names: Iterator[int] = field(default_factory=itertools.count)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"


@contextmanager
def live(config: Settings, clock: Clock) -> Iterator[Live]:
    """A center that stays up across many synchronous calls (see `Live`)."""
    with asyncio.Runner() as runner:
        app_context = running(config, clock)
        http = client(runner.run(app_context.__aenter__()))
        runner.run(http.__aenter__())
        try:
            yield Live(runner, http, clock)
        finally:
            runner.run(http.__aexit__(None, None, None))
            runner.run(app_context.__aexit__(None, None, None))


def client(app: FastAPI, source: str = "127.0.0.1") -> httpx.AsyncClient:
    """A client of `app` in process; the center sees its requests come from `source`."""
    transport = httpx.ASGITransport(app=app, client=(source, 40000))
    return httpx.AsyncClient(transport=transport, base_url=ISSUER)


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


ADMIN: Final = bearer(ADMIN_TOKEN)


async def add_member(
    http: httpx.AsyncClient,
    member_id: str,
    vaults: Sequence[str] = ("team",),
    **fields: Any,
) -> str:
    """Create a member through the API; returns its credential."""
    body = {"id": member_id, "vaults": list(vaults), **fields}
    response = await http.post("/v1/members", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    credential: str = response.json()["credential"]
    return credential


async def verifier(http: httpx.AsyncClient, clock: Clock, audience: str = RESOURCE) -> Verifier:
    """A node's Verifier for `audience`, holding the center's current JWKS and snapshot."""
    keys = KeySet.from_jwks((await http.get("/.well-known/jwks.json")).json())
    state = RevocationState()
    snapshot = (await http.get("/v1/revocations")).json()["snapshot"]
    state.accept(snapshot, keys, issuer=ISSUER, now=clock())
    return Verifier(keys=keys, issuer=ISSUER, audience=audience, revocation=state, clock=clock)


def refused(response: httpx.Response, status: int, code: str | None, *words: str) -> None:
    """Assert a refusal by its rule, not by its status alone: the status, the machine code
    (`error.code` of the center's body, `error` of OAuth's; None for an HTML page) and
    `words` its message holds (the page's text for HTML): the thing it names, the fix."""
    assert response.status_code == status, response.text
    if code is None:
        assert response.headers["content-type"].startswith("text/html"), response.text
        message = html.unescape(response.text)
    else:
        error = response.json()["error"]
        if isinstance(error, dict):
            found, message = error["code"], error["message"]
        else:
            found, message = error, response.json().get("error_description") or ""
        assert found == code, response.text
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


# ---------------------------------------------------------------- replication

HEAD: Final = "1" * 40
"""A head commit a test node reports."""


async def add_node(http: httpx.AsyncClient, node_id: str, resource: str) -> str:
    """Register a node as the operator; returns its credential."""
    response = await http.post(
        "/v1/nodes", json={"id": node_id, "resource": resource}, headers=ADMIN
    )
    assert response.status_code == 201, response.text
    credential: str = response.json()["credential"]
    return credential


def held(vault: str, epoch: int = 1, head: str | None = HEAD, commits: int = 3) -> dict[str, Any]:
    """One copy as a node reports it in a lease renewal."""
    return {"vault": vault, "epoch": epoch, "head": head, "commits": commits}


async def renew(http: httpx.AsyncClient, credential: str, *copies: dict[str, Any]) -> Any:
    """A node's lease renewal reporting `copies`; the answer's JSON (200 asserted)."""
    response = await http.post(
        "/v1/nodes/leases", json={"copies": list(copies)}, headers=bearer(credential)
    )
    assert response.status_code == 200, response.text
    return response.json()


def entry(answer: Any, vault: str) -> Any:
    """One vault of a renewal's answer."""
    return next(v for v in answer["vaults"] if v["vault"] == vault)
