"""`secondbrain-center`: run the center and manage it from the operator's terminal.

`version` prints the installed release; `serve`, `migrate`, `validate` and `public-key`
work locally from `SECONDBRAIN_CENTER_*`; `status` and `healthcheck` ask a running center.
Every noun (`member`, `grant`, `audit`, `key` …) lives in its own module of
`center.commands`, found there at start: most of their verbs call a running center over
HTTP at `SECONDBRAIN_CENTER_URL` with `SECONDBRAIN_CENTER_ADMIN_TOKEN`. Secrets are never
accepted as flags: they come from the environment, passwords from a hidden prompt.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import socket
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from center import commands
from center.errors import ListenError
from center.remote import (
    DEFAULT_URL,
    Json,
    Remote,
    RemoteError,
    Url,
    console,
    errors,
    handled,
    print_json,
    show,
)

if TYPE_CHECKING:
    from center.config import Settings

app = typer.Typer(
    help="secondbrain-center: members, grants, tokens and audit for secondbrain nodes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def nouns() -> Iterator[typer.Typer]:
    """Each module of `center.commands` gives its `app`, in the order of the modules'
    names (`_shared` is none): adding a noun is adding its module."""
    for found in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not found.name.startswith("_"):
            verbs: typer.Typer = importlib.import_module(f"{commands.__name__}.{found.name}").app
            yield verbs


for _verbs in nouns():
    app.add_typer(_verbs)


@app.command()
def version() -> None:
    """Print the installed version."""
    from center.release import VERSION  # noqa: PLC0415 - this verb only

    console.print(f"secondbrain-center {VERSION}", highlight=False)


@app.command()
@handled
def serve() -> None:
    """Run the center (host, port and everything else from SECONDBRAIN_CENTER_*)."""
    import asyncio  # noqa: PLC0415 - only the local verbs need these

    import uvicorn  # noqa: PLC0415 - only this verb needs the server

    from center.app import create_app  # noqa: PLC0415 - keeps the remote verbs light
    from center.config import load_settings  # noqa: PLC0415
    from center.db.probe import check_database  # noqa: PLC0415
    from center.serving import KEEP_ALIVE, DrainingServer  # noqa: PLC0415

    settings = load_settings()
    # Checked first, each one line: the port, then the database; never a start-up traceback.
    listener = _bind(settings.host, settings.port)
    asyncio.run(check_database(settings))
    os.umask(0o077)
    # The client's address (every per-address limit counts by it) comes from
    # X-Forwarded-For only when the peer is one of the trusted proxies; uvicorn's own
    # FORWARDED_ALLOW_IPS is never read, so this setting alone decides.
    proxies = settings.trusted_proxies
    asgi = create_app(settings)
    config = uvicorn.Config(
        asgi,
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies,
    )

    def drain() -> None:
        center = getattr(asgi.state, "center", None)
        if center is not None:
            center.draining = True

    DrainingServer(config, settings.shutdown_drain, drain).run(sockets=[listener])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ListenError(host, port, os.strerror(exc.errno) if exc.errno else str(exc)) from None


@app.command()
@handled
def migrate(as_json: Json = False) -> None:
    """Bring the database schema to this release's revision: once, under a database lock,
    and a no-op when it is there already. On PostgreSQL run it before starting upgraded
    centers, which refuse any other revision; a SQLite center migrates at start."""
    import asyncio  # noqa: PLC0415 - the database libraries: local verbs only

    from center.config import load_settings  # noqa: PLC0415
    from center.db.probe import check_database  # noqa: PLC0415
    from center.runtime import migrate_database  # noqa: PLC0415

    settings = load_settings()
    asyncio.run(check_database(settings, revision=False))
    before, after = asyncio.run(migrate_database(settings))
    changed = "yes" if before != after else "no (already there)"
    value = {"database": settings.backend, "from": before or "empty", "to": after}
    show({**value, "changed": changed if not as_json else before != after}, as_json)


@app.command()
@handled
def validate(as_json: Json = False) -> None:
    """Check the SECONDBRAIN_CENTER_* settings without starting (values are never shown)."""
    import asyncio  # noqa: PLC0415 - the database libraries: local verbs only

    from center.config import load_settings  # noqa: PLC0415
    from center.db.probe import check_database  # noqa: PLC0415

    settings = load_settings()
    asyncio.run(check_database(settings))
    summary = {
        "data_dir": str(settings.data_dir),
        "database": settings.backend,
        "database_check": _database_check(settings),
        "issuer": settings.issuer,
        "kid": settings.signing_key().kid,
        "admin_token": "set" if settings.admin_token else "missing (operator routes answer 401)",
        "listen": f"{settings.host}:{settings.port}",
    }
    show(summary, as_json)


def _database_check(settings: Settings) -> str:
    if settings.backend != "postgresql":
        return "a file in data_dir, made at the first start"
    found = f", schema {settings.database_schema!r} found" if settings.database_schema else ""
    return f"connected{found}"


@app.command("public-key")
@handled
def public_key(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """The public key for node configs: derived from SECONDBRAIN_CENTER_SECRET if set,
    else fetched from the center."""
    from tickets import SecretError, SigningKey  # noqa: PLC0415 - the key libraries: local only

    secret = os.environ.get("SECONDBRAIN_CENTER_SECRET")
    if secret:
        try:
            key = SigningKey.from_secret(secret)
        except SecretError as exc:
            raise RemoteError("bad_secret", exc.message) from None
        value: dict[str, Any] = {"kid": key.kid, "jwk": key.public.to_jwk()}
    else:
        value = Remote(url).call("GET", "/v1/public-key", authenticated=False)
    if as_json:
        print_json(console, value)
    else:
        console.print(value["kid"], value["jwk"]["x"], highlight=False)


@app.command()
@handled
def status(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Is the center up, and may it change state? (`GET /healthz`)"""
    show(Remote(url).call("GET", "/healthz", authenticated=False), as_json)


@app.command()
def healthcheck(
    url: Annotated[str, typer.Argument(help="The center's health URL.")] = f"{DEFAULT_URL}/healthz",
) -> None:
    """Exit 0 if URL answers 200 with status ok, else 1 (also while changes are locked):
    a container HEALTHCHECK that needs no shell and no curl in the image."""
    problem = _unhealthy(url)
    print("healthy" if problem is None else f"unhealthy: {url}: {problem}")
    raise typer.Exit(0 if problem is None else 1)


def _unhealthy(url: str) -> str | None:
    import httpx  # noqa: PLC0415 - the one verb that calls without `Remote`

    try:
        answer = httpx.get(url, timeout=5.0)
        body = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return type(exc).__name__
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    return None if isinstance(body, dict) and body.get("status") == "ok" else "status is not ok"


def main() -> None:
    """Console entry point; the only place that catches every exception."""
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the CLI boundary reports, never dumps a trace
        errors.print(f"error (internal): {type(exc).__name__}", markup=False, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
