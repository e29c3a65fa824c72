"""schemathesis against the center's own OpenAPI schema, on a real loopback server and
both databases: every generated request — valid or not — is sent as the operator, as a
member who owns a vault, with that member's grant token, as a registered node and with
no credential, and none may get a 5xx. The example count stays small so the run is short
in CI; raise SECONDBRAIN_SCHEMATHESIS_EXAMPLES for a deeper local run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from center import testing as t
from center.config import Settings

EXAMPLES = int(os.environ.get("SECONDBRAIN_SCHEMATHESIS_EXAMPLES", "6"))


@pytest.fixture
def settings(data_dir: Path, database: Any) -> Settings:
    """The conftest center, with username registration open so the account routes work."""
    return t.settings(
        data_dir,
        database_url=database.url,
        database_schema=database.schema,
        registration="username",
    )


def _post(server: str, path: str, body: dict[str, Any], bearer: str) -> dict[str, Any]:
    response = httpx.post(f"{server}{path}", json=body, headers=t.bearer(bearer))
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture
def bearers(server: str) -> dict[str, str | None]:
    """A world worth exploring: a node holding vault team, an owner of it with a grant
    and a pending request from an editor; and each kind of bearer."""
    node = _post(server, "/v1/nodes", {"id": "node-a", "resource": t.RESOURCE}, t.ADMIN_TOKEN)
    _post(server, "/v1/nodes/heartbeat", {"vaults": ["team"]}, node["credential"])
    owner = _post(
        server,
        "/v1/members",
        {"id": "olga", "vaults": ["team"], "role": "owner", "scope": "all"},
        t.ADMIN_TOKEN,
    )["credential"]
    editor = _post(
        server, "/v1/members", {"id": "ed", "vaults": ["team"], "role": "editor"}, t.ADMIN_TOKEN
    )["credential"]
    _post(server, "/v1/grants", {"vault": "team", "grantee": "ed", "minutes": 30}, owner)
    _post(server, "/v1/requests", {"vault": "team", "scope": "read"}, editor)
    _post(server, "/v1/tokens", {"minutes": 60}, owner)
    held = _post(server, "/v1/grants", {"vault": "team", "scope": "all", "minutes": 60}, owner)
    return {
        "operator": t.ADMIN_TOKEN,
        "member": owner,
        "grant": held["token"],
        "node": node["credential"],
        "none": None,
    }


def _server_errors(
    operation: Any, mode: GenerationMode, bearers: dict[str, str | None]
) -> list[str]:
    """Run one operation's generated cases with every bearer; describe each 5xx."""
    found: list[str] = []

    @given(case=operation.as_strategy(mode))
    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def run(case: Any) -> None:
        for who, bearer in bearers.items():
            headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
            response = case.call(headers=headers, timeout=30)
            if response.status_code >= 500:
                sent = {"query": case.query, "path": case.path_parameters, "body": case.body}
                found.append(f"{who}: {case.method} {case.path} {sent!r} -> {response.text}")

    try:
        run()
    except Unsatisfiable:  # no input of this operation can be made invalid (GET /healthz)
        assert mode is GenerationMode.NEGATIVE
    return found


@pytest.mark.slow
def test_no_generated_request_gets_a_server_error(
    server: str, bearers: dict[str, str | None]
) -> None:
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    errors = [
        error
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        for error in _server_errors(operation, mode, bearers)
    ]
    assert errors == []
