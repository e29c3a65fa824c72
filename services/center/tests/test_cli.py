"""`secondbrain-center`: local verbs from the environment, remote verbs over HTTP against a
real center, `--json` for scripts, and no secret ever taken as a flag or printed back."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from center import commands
from center import testing as t
from center.cli import app
from center.commands import audit
from center.oauth import testing as o
from center.remote import Remote
from tickets import SigningKey, make_record, to_line
from tickets.testing import cli_imports

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
    return runner.invoke(app, list(args), env=env, input=input)


@pytest.fixture
def remote(server: str) -> dict[str, str]:
    return {"SECONDBRAIN_CENTER_URL": server, "SECONDBRAIN_CENTER_ADMIN_TOKEN": t.ADMIN_TOKEN}


def test_validate_summarizes_without_showing_secrets(tmp_path: Path) -> None:
    env = {
        "SECONDBRAIN_CENTER_SECRET": t.SECRET,
        "SECONDBRAIN_CENTER_ADMIN_TOKEN": t.ADMIN_TOKEN,
        "SECONDBRAIN_CENTER_DATA_DIR": str(tmp_path),
    }
    result = invoke("validate", "--json", env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["kid"] == SigningKey.from_secret(t.SECRET).kid
    assert summary["admin_token"] == "set"
    assert t.SECRET not in result.output
    assert t.ADMIN_TOKEN not in result.output


def test_validate_names_a_bad_setting_without_its_value(tmp_path: Path) -> None:
    env = {"SECONDBRAIN_CENTER_SECRET": "TELLTALE", "SECONDBRAIN_CENTER_DATA_DIR": str(tmp_path)}
    result = invoke("validate", env=env)
    assert result.exit_code == 1
    assert "SECONDBRAIN_CENTER_SECRET" in result.output
    assert "TELLTALE" not in result.output


def test_public_key_is_derived_from_the_secret_in_the_environment() -> None:
    result = invoke("public-key", "--json", env={"SECONDBRAIN_CENTER_SECRET": t.SECRET})
    key = SigningKey.from_secret(t.SECRET)
    assert json.loads(result.output) == {"kid": key.kid, "jwk": key.public.to_jwk()}


def test_public_key_is_fetched_when_no_secret_is_set(remote: dict[str, str]) -> None:
    result = invoke("public-key", env={**remote, "SECONDBRAIN_CENTER_SECRET": ""})
    key = SigningKey.from_secret(t.SECRET)
    assert result.output.split() == [key.kid, key.public.to_jwk()["x"]]


def test_members_are_managed_over_http(remote: dict[str, str]) -> None:
    added = invoke(
        "member",
        "add",
        "--unplaced",
        "alice",
        "--vault",
        "team",
        "--role",
        "editor",
        "--json",
        env=remote,
    )
    assert added.exit_code == 0, added.output
    credential = json.loads(added.output)["credential"]
    assert credential.startswith("sbm_")
    listed = invoke("member", "list", env=remote)
    assert "alice" in listed.output
    assert credential not in listed.output
    changed = invoke("member", "set", "alice", "--scope", "rw", "--json", env=remote)
    assert json.loads(changed.output)["generation"] == 2
    removed = invoke("member", "remove", "alice", env=remote)
    assert removed.exit_code == 0
    assert "alice" not in invoke("member", "list", env=remote).output


def test_a_password_is_prompted_never_a_flag_value(remote: dict[str, str]) -> None:
    secret = "a long enough password"
    result = invoke(
        "member",
        "add",
        "bob",
        "--all-vaults",
        "--password",
        "--json",
        env=remote,
        input=f"{secret}\n{secret}\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.split("\n", 2)[-1])["password"] is True
    assert secret not in result.output
    misuse = invoke(
        "member", "add", "--unplaced", "carol", "--vault", "t", "--password", secret, env=remote
    )
    assert misuse.exit_code != 0


def test_grants_are_issued_listed_and_revoked(remote: dict[str, str]) -> None:
    issued = invoke(
        "grant",
        "issue",
        "--vault",
        "team",
        "--scope",
        "rw",
        "--minutes",
        "5",
        "--resource",
        t.RESOURCE,
        "--json",
        env=remote,
    )
    assert issued.exit_code == 0, issued.output
    grant = json.loads(issued.output)
    assert grant["token"].count(".") == 2
    listed = invoke("grant", "list", "team", "--json", env=remote)
    assert [g["id"] for g in json.loads(listed.output)["grants"]] == [grant["id"]]
    assert grant["token"] not in listed.output
    revoked = invoke("grant", "revoke", grant["id"], "--json", env=remote)
    assert json.loads(revoked.output) == {"revoked": [grant["id"]]}


def test_a_refusal_prints_the_centers_code_and_exits_1(remote: dict[str, str]) -> None:
    result = invoke("grant", "revoke", "nope", env=remote)
    assert result.exit_code == 1
    assert "error (not_found)" in result.output
    no_token = invoke("member", "list", env={**remote, "SECONDBRAIN_CENTER_ADMIN_TOKEN": ""})
    assert no_token.exit_code == 1
    assert "SECONDBRAIN_CENTER_ADMIN_TOKEN" in no_token.output


def test_nodes_are_managed_over_http(remote: dict[str, str]) -> None:
    added = invoke("node", "add", "node-a", "--resource", t.RESOURCE, "--json", env=remote)
    assert added.exit_code == 0, added.output
    credential = json.loads(added.output)["credential"]
    assert credential.startswith("sbn_")
    listed = invoke("node", "list", env=remote)
    assert "node-a" in listed.output
    assert credential not in listed.output
    assert json.loads(invoke("node", "list", "--json", env=remote).output)["nodes"][0]["id"] == (
        "node-a"
    )
    removed = invoke("node", "remove", "node-a", "--json", env=remote)
    assert json.loads(removed.output) == {"id": "node-a", "unplaced": []}
    assert "node-a" not in invoke("node", "list", env=remote).output


def test_node_add_prints_the_credential_once_for_people(remote: dict[str, str]) -> None:
    added = invoke("node", "add", "node-a", "--resource", t.RESOURCE, env=remote)
    assert added.exit_code == 0, added.output
    line = next(x for x in added.output.splitlines() if x.startswith("credential: "))
    assert line.removeprefix("credential: ").startswith("sbn_")
    again = invoke("node", "add", "node-a", "--resource", t.RESOURCE, env=remote)
    assert again.exit_code == 1
    assert "error (exists)" in again.output


def test_vaults_lists_what_the_caller_may_see(remote: dict[str, str], server: str) -> None:
    added = invoke("node", "add", "node-a", "--resource", t.RESOURCE, "--json", env=remote)
    node = json.loads(added.output)["credential"]
    beat = httpx.post(
        f"{server}/v1/nodes/heartbeat",
        json={"vaults": ["team"]},
        headers={"Authorization": f"Bearer {node}"},
    )
    assert beat.status_code == 200, beat.text
    listed = json.loads(invoke("vaults", "--json", env=remote).output)["vaults"]
    assert [(v["name"], v["mcp_url"]) for v in listed] == [("team", t.RESOURCE)]
    assert "team" in invoke("vaults", env=remote).output
    created = invoke("member", "add", "--unplaced", "rita", "--vault", "solo", "--json", env=remote)
    member = {**remote, "SECONDBRAIN_CENTER_TOKEN": json.loads(created.output)["credential"]}
    mine = json.loads(invoke("vaults", "--as-member", "--json", env=member).output)["vaults"]
    assert [(v["name"], v["mcp_url"]) for v in mine] == [("solo", None)]


def test_status_shows_the_health(remote: dict[str, str]) -> None:
    result = invoke("status", "--json", env=remote)
    assert json.loads(result.output)["status"] == "ok"


def _write_log(path: Path, records: int) -> list[str]:
    lines, head = [], None
    for index in range(records):
        record = make_record(head, action="member.add", actor="center-admin", subject=f"m{index}")
        head = (record["seq"], record["hash"])
        lines.append(to_line(record))
    path.write_text("".join(f"{line}\n" for line in lines))
    return lines


def test_audit_verify_accepts_an_intact_log(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _write_log(path, 5)
    result = invoke("audit", "verify", str(path), "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["records"] == 5


def test_audit_verify_names_the_first_bad_seq(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = _write_log(path, 5)
    lines[3] = lines[3].replace('"m3"', '"mX"')
    path.write_text("".join(f"{line}\n" for line in lines))
    result = invoke("audit", "verify", str(path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert (report["first_bad_seq"], report["problem"]) == (4, "hash_mismatch")


def test_audit_verify_detects_a_truncated_tail_given_a_known_head(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = _write_log(path, 5)
    last = json.loads(lines[-1])
    path.write_text("".join(f"{line}\n" for line in lines[:-1]))
    result = invoke(
        "audit", "verify", str(path), "--head", f"{last['seq']}:{last['hash']}", "--json"
    )
    assert result.exit_code == 1
    assert json.loads(result.output)["problem"] == "truncated"


def _options(command: Any) -> list[str]:
    names = [o for p in command.params for o in getattr(p, "opts", [])]
    for sub in getattr(command, "commands", {}).values():
        names += _options(sub)
    return names


def test_no_verb_takes_a_secret_as_a_flag() -> None:
    flags = _options(typer.main.get_command(app))
    assert not [f for f in flags if any(w in f for w in ("token", "secret", "credential="))]
    assert "--password" in flags


def test_requests_are_asked_decided_and_claimed(remote: dict[str, str]) -> None:
    created = invoke(
        "member",
        "add",
        "--unplaced",
        "rita",
        "--vault",
        "team",
        "--role",
        "editor",
        "--json",
        env=remote,
    )
    member = {**remote, "SECONDBRAIN_CENTER_TOKEN": json.loads(created.output)["credential"]}
    asked = invoke("request", "create", "--vault", "team", "--scope", "rw", "--json", env=member)
    assert asked.exit_code == 0, asked.output
    request_id = json.loads(asked.output)["id"]
    listed = invoke("request", "list", "--state", "pending", env=remote)
    assert request_id in listed.output
    approved = invoke("request", "approve", request_id, "--json", env=remote)
    assert json.loads(approved.output)["state"] == "approved"
    claimed = invoke("request", "claim", request_id, "--resource", t.RESOURCE, "--json", env=member)
    assert json.loads(claimed.output)["grantee"] == "rita"
    again = invoke("request", "claim", request_id, "--resource", t.RESOURCE, env=member)
    assert again.exit_code == 1
    assert "error (conflict)" in again.output


def test_an_approval_narrows_and_a_rejection_gives_its_reason(remote: dict[str, str]) -> None:
    created = invoke(
        "member",
        "add",
        "--unplaced",
        "nina",
        "--vault",
        "team",
        "--role",
        "editor",
        "--json",
        env=remote,
    )
    member = {**remote, "SECONDBRAIN_CENTER_TOKEN": json.loads(created.output)["credential"]}
    ids = []
    for _ in range(2):
        asked = invoke(
            "request", "create", "--vault", "team", "--scope", "rw", "--json", env=member
        )
        ids.append(json.loads(asked.output)["id"])
    narrowed = invoke(
        "request", "approve", ids[0], "--scope", "read", "--minutes", "5", "--json", env=remote
    )
    assert narrowed.exit_code == 0, narrowed.output
    shown = json.loads(narrowed.output)
    assert (shown["scope"], shown["minutes"], shown["asked_scope"]) == ("read", 5, "read_write")
    rejected = invoke("request", "reject", ids[1], "--reason", "not now", "--json", env=remote)
    assert json.loads(rejected.output)["decision_reason"] == "not now"


def test_member_verbs_need_the_member_token(remote: dict[str, str]) -> None:
    result = invoke(
        "request", "create", "--vault", "team", env={**remote, "SECONDBRAIN_CENTER_TOKEN": ""}
    )
    assert result.exit_code == 1
    assert "SECONDBRAIN_CENTER_TOKEN" in result.output


def _verbs(command: Any, prefix: str = "") -> list[str]:
    subs = getattr(command, "commands", {})
    if not subs:
        return [prefix.strip()]
    return [verb for name, sub in subs.items() for verb in _verbs(sub, f"{prefix} {name}")]


def test_every_verb_is_documented() -> None:
    guide = (Path(__file__).parents[3] / "docs" / "center.md").read_text()
    verbs = _verbs(typer.main.get_command(app))
    assert len(verbs) >= 18
    missing = [verb for verb in verbs if verb.split()[-1] not in guide]
    assert missing == []


def test_every_module_of_commands_gives_the_cli_its_verbs() -> None:
    """Adding a noun is adding its module: the CLI finds each one (`_shared` is none)."""
    folder = Path(commands.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    found = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name in modules:
        verbs = importlib.import_module(f"center.commands.{name}").app
        top = [verb.name for verb in verbs.registered_commands]
        nouns = [verbs.info.name] if verbs.info.name else top
        assert nouns, name
        assert all(noun in found for noun in nouns), (name, nouns)


def test_a_token_prints_on_one_line_for_copying(remote: dict[str, str]) -> None:
    issued = invoke("grant", "issue", "--vault", "team", "--resource", t.RESOURCE, env=remote)
    token_line = next(line for line in issued.output.splitlines() if line.startswith("token: "))
    assert token_line.removeprefix("token: ").count(".") == 2
    assert len(token_line) > 200


def test_version_prints_the_installed_release_and_loads_no_database_library() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    printed, modules = cli_imports("center.cli", ["version"], env)
    assert printed.startswith("secondbrain-center ")
    assert DATABASE.isdisjoint(modules), sorted(DATABASE & modules)


def test_key_rotate_prints_a_fresh_secret_once() -> None:
    first = json.loads(invoke("key", "rotate", "--json").output)
    second = json.loads(invoke("key", "rotate", "--json").output)
    assert first["secret"] != second["secret"]
    assert SigningKey.from_secret(first["secret"]).kid == first["kid"]


def _member_env(remote: dict[str, str], member_id: str, *args: str) -> dict[str, str]:
    created = invoke(
        "member", "add", "--unplaced", member_id, "--vault", "team", *args, "--json", env=remote
    )
    assert created.exit_code == 0, created.output
    return {**remote, "SECONDBRAIN_CENTER_TOKEN": json.loads(created.output)["credential"]}


def test_tokens_are_minted_listed_and_revoked(remote: dict[str, str]) -> None:
    member = _member_env(remote, "rita", "--role", "editor", "--scope", "rw")
    minted = invoke(
        "token",
        "issue",
        "--resource",
        t.RESOURCE,
        "--scope",
        "read",
        "--days",
        "30",
        "--json",
        env=member,
    )
    assert minted.exit_code == 0, minted.output
    token = json.loads(minted.output)
    assert token["token"].count(".") == 2
    assert (token["scope"], token["subject"]) == ("read", "rita")
    assert token["expires_at"] - token["created"] == 30 * 86_400
    every = invoke("token", "list", env=remote)
    assert token["jti"] in every.output
    assert token["token"] not in every.output
    own = json.loads(invoke("token", "list", "--as-member", "--json", env=member).output)
    assert [row["jti"] for row in own["tokens"]] == [token["jti"]]
    revoked = invoke("token", "revoke", token["jti"], "--as-member", "--json", env=member)
    assert json.loads(revoked.output)["revoked"] is not None
    again = invoke("token", "revoke", token["jti"], env=remote)
    assert again.exit_code == 1
    assert "error (conflict)" in again.output


def test_token_issue_prints_the_token_once_for_people(remote: dict[str, str]) -> None:
    member = _member_env(remote, "rita")
    minted = invoke("token", "issue", "--resource", t.RESOURCE, "--minutes", "5", env=member)
    assert minted.exit_code == 0, minted.output
    line = next(x for x in minted.output.splitlines() if x.startswith("token: "))
    assert line.removeprefix("token: ").count(".") == 2


def test_token_issue_refuses_bad_lifetimes_before_calling(remote: dict[str, str]) -> None:
    member = _member_env(remote, "rita")
    both = invoke("token", "issue", "--minutes", "5", "--days", "1", env=member)
    assert both.exit_code == 1
    assert "not both" in both.output
    too_long = invoke("token", "issue", "--days", "91", env=member)
    assert too_long.exit_code != 0
    listed = json.loads(invoke("token", "list", "--json", env=remote).output)
    assert listed == {"tokens": []}


def test_an_admin_issues_a_token_for_a_member(remote: dict[str, str]) -> None:
    admin = _member_env(remote, "ada", "--role", "admin", "--scope", "rwd")
    _member_env(remote, "rita", "--role", "editor", "--scope", "rw")
    minted = invoke(
        "token", "issue", "--resource", t.RESOURCE, "--member", "rita", "--json", env=admin
    )
    assert minted.exit_code == 0, minted.output
    token = json.loads(minted.output)
    assert (token["subject"], token["scope"]) == ("rita", "read write")
    refused = invoke("token", "issue", "--resource", t.RESOURCE, "--member", "nobody", env=admin)
    assert refused.exit_code == 1
    assert "not_found" in refused.output


def test_token_issue_needs_the_member_token(remote: dict[str, str]) -> None:
    result = invoke("token", "issue", "--resource", t.RESOURCE, env=remote)
    assert result.exit_code == 1
    assert "SECONDBRAIN_CENTER_TOKEN" in result.output


def test_audit_export_writes_a_private_file_that_verifies(
    remote: dict[str, str], tmp_path: Path
) -> None:
    _member_env(remote, "rita")
    invoke("member", "add", "--unplaced", "otto", "--vault", "ops", env=remote)
    path = tmp_path / "export.jsonl"
    written = invoke("audit", "export", "--output", str(path), "--json", env=remote)
    assert written.exit_code == 0, written.output
    summary = json.loads(written.output)
    assert summary["records"] == len(path.read_text().splitlines()) >= 3
    assert summary["first_seq"] == 1
    assert path.stat().st_mode & 0o777 == 0o600
    assert invoke("audit", "verify", str(path)).exit_code == 0
    team = invoke("audit", "export", "--vault", "team", env=remote)
    records = [json.loads(line) for line in team.output.splitlines()]
    assert [(r["action"], r["subject"]) for r in records] == [("member.add", "rita")]
    later = invoke("audit", "export", "--since", str(summary["last_seq"]), env=remote)
    assert [json.loads(line)["seq"] for line in later.output.splitlines()] == [summary["last_seq"]]


def test_audit_export_as_a_member_sees_only_its_vault(remote: dict[str, str]) -> None:
    owner = _member_env(remote, "olga", "--role", "owner", "--scope", "all")
    invoke("member", "add", "--unplaced", "otto", "--vault", "ops", env=remote)
    exported = invoke("audit", "export", "--as-member", env=owner)
    assert exported.exit_code == 0, exported.output
    vaults = {json.loads(line)["vault"] for line in exported.output.splitlines()}
    assert vaults == {"team"}
    reader = _member_env(remote, "rita")
    refused = invoke("audit", "export", "--vault", "team", "--as-member", env=reader)
    assert refused.exit_code == 1
    assert "error (forbidden)" in refused.output


def test_audit_head_is_signed_and_a_later_export_holds_it(
    remote: dict[str, str], tmp_path: Path
) -> None:
    _member_env(remote, "rita")
    shown = invoke("audit", "head", "--json", env=remote)
    assert shown.exit_code == 0, shown.output
    head = json.loads(shown.output)
    assert head["kid"] == SigningKey.from_secret(t.SECRET).kid
    assert head["head"] == f"{head['seq']}:{head['hash']}"
    invoke("member", "add", "--unplaced", "otto", "--vault", "ops", env=remote)
    path = tmp_path / "export.jsonl"
    invoke("audit", "export", "--output", str(path), env=remote)
    assert invoke("audit", "verify", str(path), "--head", head["head"]).exit_code == 0
    lines = path.read_text().splitlines()
    path.write_text("".join(f"{line}\n" for line in lines[: head["seq"] - 1]))
    cut = invoke("audit", "verify", str(path), "--head", head["head"], "--json")
    assert json.loads(cut.output)["problem"] == "truncated"


def test_audit_head_refuses_a_feed_signed_by_another_key(
    remote: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    forged = {"keys": [SigningKey.generate().public.to_jwk()]}
    center_url = remote["SECONDBRAIN_CENTER_URL"]

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/jwks.json":
            return httpx.Response(200, json=forged)
        return httpx.Response(200, json=httpx.get(f"{center_url}{request.url.path}").json())

    def impostor(url: str, **options: Any) -> Remote:
        return Remote(url, transport=httpx.MockTransport(answer), **options)

    monkeypatch.setattr(audit, "Remote", impostor)
    result = invoke("audit", "head", env=remote)
    assert result.exit_code == 1
    assert "error (bad_snapshot)" in result.output


ACME_ARGS = (
    *("--read-path", "team:projects/acme", "--write-path", "team:projects/acme/inbox"),
    *("--exclude", "team:projects/acme/hr"),
)
ACME_RULES = {
    "team": {
        "read": ["projects/acme"],
        "write": ["projects/acme/inbox"],
        "exclude": ["projects/acme/hr"],
    }
}
ACME_LINE = "team: read projects/acme; write projects/acme/inbox; except projects/acme/hr"


def test_path_rules_are_given_as_vault_folder_and_listed_on_one_line(
    remote: dict[str, str],
) -> None:
    owner = _member_env(remote, "olga", "--role", "owner", "--scope", "all", *ACME_ARGS)
    shown = invoke("member", "list", env=remote)
    assert ACME_LINE in " ".join(shown.output.split()), shown.output
    issued = invoke(
        "grant",
        "issue",
        "--vault",
        "team",
        "--resource",
        t.RESOURCE,
        "--read-path",
        "team:projects/acme/inbox",
        "--as-member",
        "--json",
        env=owner,
    )
    assert json.loads(issued.output)["issued_by"] == "olga"
    assert json.loads(issued.output)["paths"]["team"]["read"] == ["projects/acme/inbox"]
    minted = invoke("token", "issue", "--resource", t.RESOURCE, "--json", env=owner)
    assert json.loads(minted.output)["paths"] == ACME_RULES
    cleared = invoke("member", "set", "olga", "--no-paths", "--json", env=remote)
    assert json.loads(cleared.output)["paths"] == {}


def test_a_path_rule_without_its_vault_or_reaching_out_is_refused(
    remote: dict[str, str],
) -> None:
    bare = invoke("member", "add", "--unplaced", "bo", "--vault", "team", "--read-path", "x")
    assert bare.exit_code == 1
    assert "write VAULT:FOLDER, e.g. team:projects/acme" in bare.output
    member = _member_env(remote, "rita", "--read-path", "team:projects/acme")
    wider = invoke(
        "token", "issue", "--resource", t.RESOURCE, "--read-path", "team:projects", env=member
    )
    assert wider.exit_code == 1
    assert "reach further than the rules of rita" in " ".join(wider.output.split())
    escaping = invoke("member", "set", "rita", "--read-path", "team:../up", env=remote)
    assert "path rule '../up' leaves the vault" in " ".join(escaping.output.split())


def test_write_paths_and_exclusions_alone_read_the_whole_vault(remote: dict[str, str]) -> None:
    whole = ("--write-path", "team:inbox", "--exclude", "team:hr")
    member = _member_env(remote, "wes", "--role", "editor", "--scope", "rw", *whole)
    minted = invoke("token", "issue", "--resource", t.RESOURCE, "--json", env=member)
    assert json.loads(minted.output)["paths"] == {
        "team": {"read": None, "write": ["inbox"], "exclude": ["hr"]}
    }
    shown = " ".join(invoke("member", "list", env=remote).output.split())
    assert "team: read the whole vault; write inbox; except hr" in shown


def test_an_id_that_begins_with_a_dash_is_taken_as_the_id(remote: dict[str, str]) -> None:
    """A kid is a base64url thumbprint and member ids may begin with '-': one key in 64
    has such a kid, and `key revoke <kid>` must reach the center rather than fail on an
    'unknown option'."""
    dashed = next(k.kid for k in iter(SigningKey.generate, None) if k.kid.startswith("-"))
    unknown = invoke("key", "revoke", dashed, "--reason", "leak", env=remote)
    assert unknown.exit_code == 1, unknown.output
    assert "No such option" not in unknown.output
    assert "error (not_found)" in unknown.output
    created = invoke("member", "add", "--unplaced", "--vault", "team", "--", "-dash", env=remote)
    assert created.exit_code == 0, created.output
    removed = invoke("member", "remove", "-dash", "--json", env=remote)
    assert removed.exit_code == 0, removed.output
    assert invoke("member", "remove", "-dash", env=remote).exit_code == 1  # gone
    typo = invoke("member", "set", "rita", "--rol", "admin", env=remote)
    assert typo.exit_code == 2  # a mistyped option is still refused, never taken as a value
    assert "--rol" in typo.output


@pytest.mark.asyncio
async def test_consents_are_listed_and_revoked(server: str, remote: dict[str, str]) -> None:
    member = _member_env(remote, "rita", "--role", "editor", "--scope", "rw")
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        await o.add_node(http)
        body = {"password": o.PASSWORD}
        assert (await http.patch("/v1/members/rita", json=body, headers=t.ADMIN)).is_success
        client_id = await o.register(http)
        signed = await o.sign_in(http, o.authorize_params(client_id, o.pkce()), username="rita")
        assert "code" in o.redirect_params(signed)
    every = invoke("consent", "list", env=remote)
    assert every.exit_code == 0, every.output
    assert "Test Client" in every.output
    assert "http://127.0.0.1:33418" in every.output
    alone = json.loads(invoke("consent", "list", "--member", "rita", "--json", env=remote).output)
    [kept] = alone["consents"]
    assert (kept["member"], kept["client_id"], kept["scope"]) == ("rita", client_id, "read write")
    own = json.loads(invoke("consent", "list", "--as-member", "--json", env=member).output)
    assert [c["id"] for c in own["consents"]] == [kept["id"]]
    bad = invoke("consent", "revoke", "no/such", env=remote)
    assert bad.exit_code == 1
    assert "consent list" in bad.output
    revoked = invoke("consent", "revoke", kept["id"], "--as-member", "--json", env=member)
    assert revoked.exit_code == 0, revoked.output
    assert json.loads(revoked.output)["ended_sign_ins"] == 0
    assert json.loads(invoke("consent", "list", "--json", env=remote).output) == {"consents": []}


DATABASE = {"sqlalchemy", "alembic", "asyncpg", "aiosqlite", "fastapi", "uvicorn"}


@pytest.mark.parametrize("args", [["--help"], ["member", "list"]])
def test_a_remote_verb_loads_no_database_library(args: list[str], remote: dict[str, str]) -> None:
    """What start-up costs: `member list` makes one HTTP call, `--help` none; neither loads
    the database libraries or the server (bench/bench_cli_start.py times them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    printed, modules = cli_imports("center.cli", args, {**env, **remote})
    assert printed  # the verb ran and said something
    assert DATABASE.isdisjoint(modules), sorted(DATABASE & modules)


def test_vaults_and_vault_verbs_show_and_change_who_is_primary(
    remote: dict[str, str], server: str
) -> None:
    creds = {}
    for name in ("node-a", "node-b", "node-c"):
        added = invoke(
            "node", "add", name, "--resource", f"https://{name}.test/mcp", "--json", env=remote
        )
        creds[name] = json.loads(added.output)["credential"]

    def renew(node: str, commits: int = 3) -> None:
        body = {"copies": [{"vault": "team", "epoch": 1, "head": "1" * 40, "commits": commits}]}
        answer = httpx.post(
            f"{server}/v1/nodes/leases",
            json=body,
            headers={"Authorization": f"Bearer {creds[node]}"},
        )
        assert answer.status_code == 200, answer.text

    renew("node-a")
    renew("node-b", commits=1)
    # A table or `name: value` lines, as the console's width decides (it is measured once
    # per process): the cells are the same.
    shown = invoke("vaults", env={**remote, "COLUMNS": "200"}).output
    assert all(cell in shown for cell in ("team", "node-a", "node-b (lagging 2)", "serving"))
    listed = json.loads(invoke("vaults", "--json", env=remote).output)["vaults"]
    assert [(v["name"], v["node"], v["state"]) for v in listed] == [("team", "node-a", "serving")]

    moved = invoke("vault", "move", "team", "--to", "node-c", env=remote)
    assert moved.exit_code == 0, moved.output
    assert "target: node-c" in moved.output
    assert "step: catch_up" in moved.output
    assert (
        "moving to node-c (catch_up)" in invoke("vaults", env={**remote, "COLUMNS": "200"}).output
    )
    again = invoke("vault", "move", "team", "--to", "node-b", env=remote)
    assert again.exit_code == 1
    assert "error (conflict): team is moving to node-c already" in again.output
    unknown = invoke("vault", "move", "nope", "--to", "node-c", env=remote)
    assert "error (not_found)" in unknown.output
    bad = invoke("vault", "move", "Bad/Name", "--to", "node-c", env=remote)
    assert bad.exit_code == 1
    assert "error (invalid_argument)" in bad.output

    refused = invoke("vault", "promote", "team", "--node", "node-b", env=remote)
    assert refused.exit_code == 1
    assert "--force" in refused.output
    forced = invoke("vault", "promote", "team", "--node", "node-b", "--force", "--json", env=remote)
    shown = forced.output[forced.output.index("{\n") :]  # the server logs to this stdout too
    assert json.loads(shown) == {
        "vault": "team",
        "primary": "node-b",
        "epoch": 2,
        "demoted": "node-a",
    }
    drained = invoke("node", "drain", "node-b", "--json", env=remote)
    assert json.loads(drained.output)["moves"] == [{"vault": "team", "to": "node-a"}]
    missing = invoke("node", "drain", "nobody", env=remote)
    assert "error (not_found)" in missing.output
