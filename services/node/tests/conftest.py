"""Fixtures for the node's service tests: a node in-process with real vaults and real tokens.

Tokens are signed with a throw-away Ed25519 key whose public half the node reads from a
JWKS file, with a signed revocation snapshot beside it — the offline deployment. Every
successful tool result is checked against the tool's outputSchema.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import pytest_asyncio
import structlog

from tickets import SigningKey
from tickets import testing as tt
from vault_node.app import create_app
from vault_node.registry import REGISTRY
from vault_node.testing import (
    PUBLIC_URL,
    SAMPLE_NOTES,
    Harness,
    NodeFactory,
    make_config,
    write_files,
)


def check_output(tool: str, result: dict[str, Any]) -> None:
    """structuredContent satisfies the outputSchema, and the text block carries the same."""
    schema = dict(REGISTRY[tool].output)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(result["structuredContent"], schema, cls=jsonschema.Draft202012Validator)
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


@pytest.fixture(autouse=True)
def _structlog_defaults() -> None:
    """Every test starts from structlog's defaults: a test run before it may have left a
    configuration that filters info lines out (a center started with log_level error does),
    and capture_logs changes the processors, never that filter."""
    structlog.reset_defaults()


@pytest.fixture
def key() -> SigningKey:
    return tt.throwaway_key()


@pytest_asyncio.fixture
async def start_node(tmp_path: Path, key: SigningKey) -> AsyncIterator[NodeFactory]:
    """Start a node over a data dir holding `files` in vault `default` (and other `vaults`)."""
    started: list[tuple[Any, httpx.AsyncClient]] = []

    async def start(
        files: dict[str, str | bytes] | None = None,
        vaults: dict[str, dict[str, str | bytes]] | None = None,
        **overrides: Any,
    ) -> Harness:
        config = make_config(tmp_path, key, **overrides)
        write_files(
            config.data_dir / config.default_vault, SAMPLE_NOTES if files is None else files
        )
        for name, content in (vaults or {}).items():
            write_files(config.data_dir / name, content)
        app = create_app(config)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=PUBLIC_URL)
        started.append((lifespan, client))
        harness = Harness(client, config, key, config.data_dir, app=app, check=check_output)
        harness.default_token = harness.token()
        return harness

    yield start
    for lifespan, client in reversed(started):
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest_asyncio.fixture
async def node(start_node: NodeFactory) -> Harness:
    return await start_node()
