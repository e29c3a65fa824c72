"""The HTTP boundary: one error body shape, body limits, health and the OpenAPI schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from center import testing as t
from center.app import create_app, error_response
from center.remote import TIME_FIELDS, _cell, iso
from center.routes.deps import ErrorBody

SUCCESS = ("200", "201", "202")


def assert_error_shape(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    ErrorBody.model_validate(body)  # the body the OpenAPI schema declares for every error
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]


@pytest.mark.asyncio
async def test_every_failure_has_the_one_error_body_shape(client: httpx.AsyncClient) -> None:
    member = await t.add_member(client, "alice")
    cases = [
        (await client.get("/v1/members"), 401, "unauthorized"),
        (await client.get("/v1/members", headers=t.bearer(member)), 403, "forbidden"),
        (await client.get("/v1/members/nobody", headers=t.ADMIN), 404, "not_found"),
        (await client.get("/no/such/route"), 404, "not_found"),
        (await client.put("/v1/members", headers=t.ADMIN), 405, "method_not_allowed"),
        (
            await client.post(
                "/v1/members", json={"id": "alice", "vaults": ["team"]}, headers=t.ADMIN
            ),
            409,
            "exists",
        ),
        (
            await client.post("/v1/members", json={"id": "a b", "vaults": ["t"]}, headers=t.ADMIN),
            400,
            "invalid_argument",
        ),
        (await client.post("/v1/members", json={"id": 5}, headers=t.ADMIN), 422, "invalid_request"),
        (
            await client.post("/v1/members", content=b"{" * 70_000, headers=t.ADMIN),
            413,
            "too_large",
        ),
    ]
    for response, status, code in cases:
        assert_error_shape(response, status, code)


def test_the_error_helper_builds_the_same_shape() -> None:
    response = error_response(409, "conflict", "already decided")
    assert response.body == b'{"error":{"code":"conflict","message":"already decided"}}'


@pytest.mark.asyncio
async def test_a_401_names_the_bearer_scheme(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/session", headers=t.bearer("sbm_unknown-credential-xyz"))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.asyncio
async def test_a_body_over_the_limit_is_refused_even_without_content_length(
    client: httpx.AsyncClient,
) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(70):
            yield b"x" * 1024

    response = await client.post("/v1/members", content=chunks(), headers=t.ADMIN)
    assert_error_shape(response, 413, "too_large")


@pytest.mark.asyncio
async def test_validation_errors_never_echo_the_input(client: httpx.AsyncClient) -> None:
    body = {"id": "alice", "vaults": ["team"], "password": 12345678901234, "TELLTALE": 1}
    response = await client.post("/v1/members", json=body, headers=t.ADMIN)
    assert_error_shape(response, 422, "invalid_request")
    assert "12345678901234" not in response.text


@pytest.mark.asyncio
async def test_health_answers_without_authentication(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["audit_seq"] >= 1
    assert set(body) == {"status", "version", "database", "started", "uptime", "audit_seq", "kid"}


@pytest.mark.asyncio
async def test_every_route_is_in_the_openapi_schema(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    for path, methods in {
        "/healthz": {"get"},
        "/v1/public-key": {"get"},
        "/.well-known/jwks.json": {"get"},
        "/v1/members": {"get", "post"},
        "/v1/members/{member_id}": {"get", "patch", "delete"},
        "/v1/session": {"get"},
        "/v1/tokens": {"get", "post"},
        "/v1/tokens/{jti}": {"delete"},
        "/v1/grants": {"get", "post"},
        "/v1/grants/{grant_id}": {"delete"},
        "/v1/access/{vault}": {"get"},
        "/v1/revocations": {"get"},
        "/v1/requests": {"get", "post"},
        "/v1/requests/{request_id}/approve": {"post"},
        "/v1/requests/{request_id}/reject": {"post"},
        "/v1/requests/{request_id}/cancel": {"post"},
        "/v1/requests/{request_id}/claim": {"post"},
        "/v1/audit": {"get"},
        "/v1/nodes": {"get", "post"},
        "/v1/nodes/{node_id}": {"delete"},
        "/v1/nodes/heartbeat": {"post"},
        "/v1/vaults": {"get"},
    }.items():
        assert methods <= set(paths[path]), path
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    assert all(op.get("summary") for item in paths.values() for op in item.values())


def _object(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    """Whether `schema` is an object schema with named properties (a `$ref` to one, or a
    choice of such), not `{}` or a bare `{"type": "object"}`."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        return all(_object(part, components) for part in schema["anyOf"])
    return schema.get("type") == "object" and bool(schema.get("properties"))


def _untyped_answers(schema: dict[str, Any]) -> list[str]:
    """Every operation that declares no success answer, or a success answer in a media
    type without a schema for it; JSON and NDJSON (each line) must be an object schema."""
    components = schema["components"]["schemas"]
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            answers = {s: a for s, a in operation["responses"].items() if s in SUCCESS}
            if not answers and "302" not in operation["responses"]:
                found.append(f"{method.upper()} {path}: no success answer")
            for status, answer in answers.items():
                for media, content in answer.get("content", {}).items():
                    shape = content.get("schema", {})
                    objects = media in {"application/json", "application/x-ndjson"}
                    if not shape or (objects and not _object(shape, components)):
                        found.append(f"{method.upper()} {path} {status} {media}: {shape}")
    return found


@pytest.mark.asyncio
async def test_every_route_declares_the_schema_of_its_answer(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert _untyped_answers(schema) == []


@pytest.mark.asyncio
async def test_every_api_route_declares_the_error_body(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    error = {"$ref": "#/components/schemas/ErrorBody"}
    missing = [
        f"{method.upper()} {path}"
        for path, item in schema["paths"].items()
        if path.startswith(("/v1/", "/healthz", "/.well-known/jwks.json"))
        for method, operation in item.items()
        for status in ("4XX", "5XX")
        if operation["responses"].get(status, {}).get("content", {}).get("application/json")
        != {"schema": error}
    ]
    assert missing == []


def test_the_check_names_a_route_that_answers_an_untyped_object() -> None:
    named = {"$ref": "#/components/schemas/Named"}
    schema = {
        "components": {"schemas": {"Named": {"type": "object", "properties": {"a": {}}}}},
        "paths": {
            "/typed": {"get": {"responses": {"200": _json(named)}}},
            "/loose": {"post": {"responses": {"201": _json({"type": "object"})}}},
            "/any": {"get": {"responses": {"200": _json({})}}},
            "/page": {"get": {"responses": {"200": {"content": {"text/html": {}}}}}},
            "/text": {"get": {"responses": {"200": _content("text/html", {"type": "string"})}}},
            "/lines": {"get": {"responses": {"200": _content("application/x-ndjson", {})}}},
            "/rows": {"get": {"responses": {"200": _content("application/x-ndjson", named)}}},
            "/gone": {"delete": {"responses": {"422": _json({})}}},
        },
    }
    assert _untyped_answers(schema) == [
        "POST /loose 201 application/json: {'type': 'object'}",
        "GET /any 200 application/json: {}",
        "GET /page 200 text/html: {}",
        "GET /lines 200 application/x-ndjson: {}",
        "DELETE /gone: no success answer",
    ]


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return _content("application/json", schema)


def _content(media: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}}


@pytest.mark.asyncio
async def test_the_bare_address_leads_to_the_console_and_nothing_loads_from_outside(
    client: httpx.AsyncClient,
) -> None:
    root = await client.get("/")
    assert (root.status_code, root.headers["location"]) == (303, "/console")
    for page in ("/docs", "/redoc"):  # Swagger UI and ReDoc fetch their scripts from a CDN
        gone = await client.get(page)
        assert_error_shape(gone, 404, "not_found")
        assert "/console" in gone.json()["error"]["message"]
        assert "/openapi.json" in gone.json()["error"]["message"]
    assert (await client.get("/openapi.json")).status_code == 200


def test_every_time_field_of_the_api_is_shown_as_iso_by_the_cli() -> None:
    """docs/center.md promises ISO 8601 in every text output: each field the schema
    describes as Unix time is one the CLI rewrites."""
    schema = create_app(t.settings(Path("/nonexistent"))).openapi()
    timed = {
        name
        for model in schema["components"]["schemas"].values()
        for name, field in model.get("properties", {}).items()
        if "Unix time" in field.get("description", "")
    }
    assert timed
    assert timed <= TIME_FIELDS, sorted(timed - TIME_FIELDS)
    assert _cell(1796177850, "revoked") == iso(1796177850)
