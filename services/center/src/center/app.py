"""`create_app(settings)`: the center's FastAPI application.

This is the HTTP boundary: one exception handler renders every failure as
`{"error": {"code": ..., "message": ...}}`, request bodies are size-limited before any
route reads them, and each request is logged by method, route and status — never by
header, body or credential.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from center import failover, leases, moves
from center.config import Settings
from center.console.routes import CONSOLE_ROUTERS
from center.errors import CenterError, RateLimitedError, TooLargeError
from center.log import configure_logging, get_logger, scrub
from center.passwords import Passwords
from center.release import VERSION
from center.routes import ROUTERS
from center.runtime import open_center, prune_forever
from center.store import Clock

HTTP_CODES = {
    400: "invalid_argument",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    422: "invalid_request",
}


NO_ROUTE = (
    "no such route; the console is at /console, the API schema at /openapi.json"
    " (docs/reference/center-api.md in the repository)"
)


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """The one error body shape of the center."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _center_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CenterError)
    response = error_response(exc.status, exc.code, scrub(exc.message))
    if isinstance(exc, RateLimitedError):
        response.headers["Retry-After"] = str(exc.retry_after)
    return response


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        problems.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    message = "; ".join(problems[:5]) + "; fix the request and send it again"
    return error_response(422, "invalid_request", scrub(message))


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = HTTP_CODES.get(exc.status_code, "http_error")
    message = NO_ROUTE if exc.status_code == 404 else str(exc.detail)
    response = error_response(exc.status_code, code, message)
    response.headers.update(exc.headers or {})
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    get_logger().error("internal_error", path=request.url.path, error=type(exc).__name__)
    return error_response(500, "internal", "the center failed unexpectedly; the log has details")


LEASES_BODY = 1 << 20
"""A lease renewal names up to `leases.MAX_COPIES` copies (about 130 bytes each)."""


class BodyLimit:
    """Refuse (413) a request whose body exceeds `limit` bytes (a route of `larger`, its
    own limit), before a route reads it."""

    def __init__(self, app: ASGIApp, limit: int, larger: dict[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.larger = larger or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = max(self.limit, self.larger.get(scope["path"], 0))
        too_large = error_response(413, "too_large", TooLargeError(limit).message)
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > limit:
            await too_large(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > limit:
                await too_large(scope, receive, send)
                return
        body: list[Message] = [
            {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        ]

        async def replay() -> Message:
            return body.pop() if body else await receive()

        await self.app(scope, replay, send)


class AccessLog:
    """One log line per request: method, route, status and duration; nothing else."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route = scope.get("route")
            get_logger().info(
                "request",
                method=scope["method"],
                route=getattr(route, "path", "?"),
                status=status,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )


def create_app(
    settings: Settings, *, clock: Clock = time.time, passwords: Passwords | None = None
) -> FastAPI:
    """The center app; its lifespan opens the store, verifies the audit log and prunes."""
    configure_logging(settings.log_level)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_center(settings, clock=clock, passwords=passwords) as center:
            app.state.center = center
            pruner = asyncio.create_task(prune_forever(center))
            timing = leases.Timing.of(settings)
            watcher = asyncio.create_task(
                failover.watch_forever(
                    center.store, timing, also=lambda: moves.advance(center.store, timing)
                )
            )
            get_logger().info("started", version=VERSION, database=settings.backend)
            try:
                yield
            finally:
                for task in (pruner, watcher):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    app = FastAPI(
        title="secondbrain center",
        version=VERSION,
        summary="Members, grants, tokens, revocations and audit for secondbrain vault nodes.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads from an outside host: blank offline, so not served
        redoc_url=None,
    )
    handlers: dict[Any, Any] = {
        CenterError: _center_error,
        RequestValidationError: _validation_error,
        HTTPException: _http_error,
        Exception: _unexpected,
    }
    for kind, handler in handlers.items():
        app.add_exception_handler(kind, handler)
    for router in (*ROUTERS, *CONSOLE_ROUTERS):
        app.include_router(router)
    app.add_middleware(
        BodyLimit, limit=settings.max_body_bytes, larger={"/v1/nodes/leases": LEASES_BODY}
    )
    app.add_middleware(AccessLog)
    return app
