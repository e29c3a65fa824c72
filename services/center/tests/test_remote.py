"""The CLI's HTTP client: the admin token only from the environment, errors as the
center's own code and message."""

from __future__ import annotations

import socket

import pytest

from center import testing as t
from center.remote import Remote, RemoteError


def test_without_an_admin_token_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SECONDBRAIN_CENTER_ADMIN_TOKEN", raising=False)
    with pytest.raises(RemoteError) as failed:
        Remote("http://127.0.0.1:9").call("GET", "/v1/members")
    assert failed.value.code == "no_token"
    assert "SECONDBRAIN_CENTER_ADMIN_TOKEN" in failed.value.message


def test_the_operator_running_a_members_verb_is_told_what_to_do_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`token issue` with only the admin token set: which credential, and the operator's way."""
    monkeypatch.setenv("SECONDBRAIN_CENTER_ADMIN_TOKEN", t.ADMIN_TOKEN)
    monkeypatch.delenv("SECONDBRAIN_CENTER_TOKEN", raising=False)
    with pytest.raises(RemoteError) as failed:
        Remote("http://127.0.0.1:9", env="SECONDBRAIN_CENTER_TOKEN").call("POST", "/v1/tokens")
    assert failed.value.code == "no_token"
    assert "set it to your member credential (printed by `member add`" in failed.value.message
    assert "this verb acts as a member" in failed.value.message
    assert "`grant issue --vault V [--grantee M]`" in failed.value.message
    assert t.ADMIN_TOKEN not in failed.value.message


def test_an_unreachable_center_is_named_without_the_token() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RemoteError) as failed:
        Remote(f"http://127.0.0.1:{port}", token=t.ADMIN_TOKEN).call("GET", "/v1/members")
    assert failed.value.code == "unreachable"
    assert t.ADMIN_TOKEN not in str(failed.value)


def test_a_refusal_carries_the_centers_code_and_message(server: str) -> None:
    with pytest.raises(RemoteError) as failed:
        Remote(server, token="wrong-token-" + "x" * 40).call("GET", "/v1/members")
    assert failed.value.code == "unauthorized"
    health = Remote(server, token="").call("GET", "/healthz", authenticated=False)
    assert health["status"] == "ok"


def test_a_successful_call_returns_json(server: str) -> None:
    remote = Remote(server, token=t.ADMIN_TOKEN)
    created = remote.call("POST", "/v1/members", body={"id": "alice", "vaults": ["team"]})
    assert created["id"] == "alice"
    assert remote.call("GET", "/v1/members")["members"][0]["id"] == "alice"
    assert remote.call("GET", "/v1/audit").count("\n") == 2
