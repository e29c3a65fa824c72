"""The console's nodes, audit and own-access pages, and the rule over all of them: a
member reaches only what the API would let it, on every console route."""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator, Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest
import pytest_asyncio
from fastapi import FastAPI
from fastapi.routing import APIRoute

from center import testing as t
from center.config import Settings
from center.console.routes import CONSOLE_ROUTERS
from center.console.testing import SENT_TO_SIGN_IN, Browser, redirect
from center.oauth import testing as o
from tickets import Reach

pytestmark = pytest.mark.asyncio


async def prepare(running: FastAPI) -> str:
    """alice (editor of team), bob (admin of team), carol (admin of other), a node."""
    async with t.client(running) as http:
        credential = await o.add_node(http)
        await o.add_member(http, "alice", role="editor", scope="read_write")
        await o.add_member(http, "bob", role="admin", scope="read_write_delete")
        await o.add_member(http, "carol", vaults=("other",), role="admin", scope="read_write")
    return credential


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock, passwords=o.fast_passwords()) as running:
        running.state.node_credential = await prepare(running)
        yield running


async def heartbeat(app: FastAPI, **body: object) -> None:
    async with t.client(app) as http:
        answer = await http.post(
            "/v1/nodes/heartbeat", json=body, headers=t.bearer(app.state.node_credential)
        )
    assert answer.status_code == 200, answer.text


# ---------------------------------------------------------------- nodes


async def test_a_node_never_heard_from_is_flagged(browsers: Callable[[], Browser]) -> None:
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/nodes")
    assert page.status_code == 200
    assert "never sent a heartbeat" in page.text


async def test_a_fresh_node_is_healthy_and_a_silent_one_turns_stale(
    browsers: Callable[[], Browser], app: FastAPI, clock: t.Clock
) -> None:
    async with t.client(app) as http:
        seq = (await http.get("/v1/revocations")).json()["seq"]
    await heartbeat(app, vaults=["team"], revocation_seq=seq)
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/nodes")
    assert "healthy" in page.text
    assert f"{seq} (lag 0)" in page.text
    assert "team" in page.text
    clock.advance(10 * 60)
    await operator.sign_in_operator()
    stale = await operator.get("/console/nodes")
    assert "stale: no heartbeat for 10 min" in stale.text


async def test_a_node_behind_the_feed_or_with_a_foreign_checkpoint_is_flagged(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    await heartbeat(
        app,
        vaults=["team"],
        revocation_seq=0,
        audit_checkpoint={"seq": 1, "hash": "f" * 64},
    )
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/nodes")
    assert "revocation snapshot(s) behind the feed" in page.text
    assert "MISMATCH" in page.text


async def test_the_nodes_page_shows_replication_and_moves_a_vault(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    async with t.client(app) as http:
        other = await t.add_node(http, "node-b", "https://node-b.test/mcp")
        await t.renew(http, app.state.node_credential, t.held("team", commits=5))
        await t.renew(http, other, t.held("team", commits=2))
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/nodes")
    assert "node-b (lagging 3)" in page.text
    assert "<td>serving</td>" in page.text
    assert 'action="/console/nodes/vaults/team/move"' in page.text
    moved = await operator.post("/console/nodes/vaults/team/move", to="node-b", keep="yes")
    assert redirect(moved)[0] == 303
    after = await operator.get(redirect(moved)[1] or "/console/nodes")
    assert "Moving team to node-b" in after.text
    assert "moving to node-b (catch_up)" in after.text
    await operator.get("/console/nodes")
    again = await operator.post("/console/nodes/vaults/team/move", to="node-b")
    assert again.status_code == 409
    assert "team is moving to node-b already" in html.unescape(again.text)
    async with t.client(app) as http:
        actions = [
            json.loads(line)
            for line in (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
        ]
    started = next(r for r in actions if r["action"] == "vault.move.start")
    assert (started["channel"], started["subject"]) == ("console", "node-b")


# ---------------------------------------------------------------- audit


async def test_the_audit_page_is_newest_first_with_the_chain_verified_and_a_signed_head(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/audit")
    assert "Chain verified" in page.text
    seqs = [int(s) for s in re.findall(r"<tr><td data-label=\"Seq\">(\d+)</td>", page.text)]
    assert seqs == sorted(seqs, reverse=True)
    assert "Signed head: seq" in page.text
    async with t.client(app) as http:
        key = (await http.get("/v1/public-key")).json()["kid"]
    assert key in page.text


async def test_the_export_is_the_apis_bytes_for_the_same_filter(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    operator = browsers()
    await operator.sign_in_operator()
    day = "2026-01-01"
    filters = {"actor": "center-admin", "action": "member", "from_date": day, "to_date": day}
    page = await operator.get("/console/audit", **filters)
    assert page.text.count('<tr><td data-label="Seq">') == 3
    exported = await operator.get("/console/audit/export", **filters)
    async with t.client(app) as http:
        api = await http.get("/v1/audit", params=filters, headers=t.ADMIN)
    assert exported.content == api.content
    assert exported.headers["content-type"] == api.headers["content-type"]
    assert [json.loads(x)["subject"] for x in api.text.splitlines()] == ["alice", "bob", "carol"]
    nothing = await operator.get("/console/audit/export", from_date="2026-01-02")
    assert nothing.content == b""


async def test_a_manager_reads_its_vaults_records_and_a_reader_none(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    carol, alice = browsers(), browsers()
    await carol.sign_in("carol")
    other = await carol.get("/console/audit")
    assert other.status_code == 200
    team = await carol.get("/console/audit", vault="team")
    assert team.status_code == 403
    assert "only an admin or owner of vault 'team' may read its audit" in html.unescape(team.text)
    await alice.sign_in()
    t.refused(
        await alice.get("/console/audit"),
        403,
        None,
        "only an admin or owner of vault 'team' may read its audit",
    )
    t.refused(
        await alice.get("/console/audit/export"),
        403,
        None,
        "only an admin or owner of vault 'team' may read its audit",
    )


async def test_a_broken_chain_is_reported_at_the_top(
    sqlite_settings: Settings, clock: t.Clock
) -> None:
    async with t.running(sqlite_settings, clock, passwords=o.fast_passwords()) as running:
        await prepare(running)
        log = Path(sqlite_settings.data_dir) / "audit.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        bad = next(n for n, line in enumerate(lines) if '"subject":"alice"' in line)
        lines[bad] = lines[bad].replace('"alice"', '"alicf"')
        log.write_text("".join(lines))
        async with t.client(running) as http:
            operator = Browser(http)
            await operator.sign_in_operator()
            page = await operator.get("/console/audit")
    assert "Chain broken" in page.text
    assert f"at seq {bad + 1}" in page.text


# ---------------------------------------------------------------- my access


async def test_my_page_shows_my_vaults_grants_and_tokens(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    await heartbeat(app, vaults=["team"])
    async with t.client(app) as http:
        issued = await http.post(
            "/v1/grants", json={"vault": "team", "grantee": "alice", "minutes": 20}, headers=t.ADMIN
        )
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/tokens")
    await alice.post("/console/tokens", scope="read", days="3")
    page = await alice.get("/console/me")
    assert page.status_code == 200
    assert t.RESOURCE in page.text
    assert issued.json()["id"] in page.text
    assert "read, write" in page.text
    assert re.search(r"<span class=\"mono\">[^<]+</span> · read in team", page.text)


async def allowed(app: FastAPI, member: str) -> str:
    """Sign `member` in for a new OAuth client and allow it; the consent's id."""
    async with t.client(app) as http:
        client_id = await o.register(http)
        signed = await o.sign_in(http, o.authorize_params(client_id, o.pkce()), username=member)
        assert "code" in o.redirect_params(signed)
        listed = await http.get("/v1/consents", params={"member": member}, headers=t.ADMIN)
    found: str = next(c["id"] for c in listed.json()["consents"] if c["client_id"] == client_id)
    return found


async def test_my_access_lists_the_applications_i_allowed_and_revokes_one(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    consent_id = await allowed(app, "alice")
    alice = browsers()
    await alice.sign_in()
    page = await alice.get("/console/me")
    assert "Applications I allowed" in page.text
    assert "Test Client" in page.text
    assert "http://127.0.0.1:33418" in page.text
    assert f"/console/consents/{consent_id}/revoke" in page.text
    revoked = await alice.post(f"/console/consents/{consent_id}/revoke")
    assert revoked.status_code == 303
    assert revoked.headers["location"].startswith("/console/me?notice=")
    after = await alice.get(revoked.headers["location"])
    assert "Revoked the consent for Test Client; 0 sign-in(s) ended." in html.unescape(after.text)
    assert f"/console/consents/{consent_id}/revoke" not in after.text
    records = (await alice.http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    revoke = json.loads(next(r for r in reversed(records) if '"consent.revoke"' in r))
    assert (revoke["actor"], revoke["channel"]) == ("alice", "console")


async def test_the_operator_sees_and_revokes_a_members_consents(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    consent_id = await allowed(app, "bob")
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/members/bob")
    assert "Applications it allowed" in page.text
    assert f"/console/consents/{consent_id}/revoke" in page.text
    assert (
        'Applications it allowed</h2>\n<p class="muted">None.'
        in (await operator.get("/console/members/alice")).text
    )
    await operator.get("/console/members/bob")
    revoked = await operator.post(f"/console/consents/{consent_id}/revoke")
    assert revoked.status_code == 303
    assert revoked.headers["location"].startswith("/console/members/bob?notice=")


async def test_changing_my_password_ends_my_session_and_my_oauth_sign_ins(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, other_tab = browsers(), browsers()
    await alice.sign_in()
    await other_tab.sign_in()
    await alice.get("/console/me")
    new = "another long enough password"
    wrong = await alice.post("/console/me/password", current="wrong password!", new=new, repeat=new)
    t.refused(wrong, 403, None, "the current password is wrong")
    await alice.get("/console/me")
    changed = await alice.post("/console/me/password", current=o.PASSWORD, new=new, repeat=new)
    assert changed.status_code == 303
    assert changed.headers["location"] == "/console/sign-in?ended=password"
    assert redirect(await alice.get("/console/me")) == SENT_TO_SIGN_IN
    assert redirect(await other_tab.get("/console/me")) == SENT_TO_SIGN_IN
    t.refused(
        await alice.sign_in(password=o.PASSWORD),
        401,
        None,
        "Invalid member id, e-mail or password.",
    )
    assert redirect(await alice.sign_in(password=new)) == (303, "/console/requests")
    async with t.client(app) as http:
        exported = await http.get("/v1/audit", headers=t.ADMIN, params={"action": "member"})
    last = json.loads(exported.text.splitlines()[-1])
    assert (last["action"], last["actor"], last["channel"]) == (
        "member.password",
        "alice",
        "console",
    )


async def test_the_api_changes_ones_own_password_too(app: FastAPI) -> None:
    async with t.client(app) as http:
        dave = await t.add_member(http, "dave", password=o.PASSWORD)
        body = {"current": o.PASSWORD, "new": "dave's brand new password"}
        changed = await http.put("/v1/session/password", json=body, headers=t.bearer(dave))
        again = await http.put("/v1/session/password", json=body, headers=t.bearer(dave))
        operator = await http.put("/v1/session/password", json=body, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    t.refused(again, 403, "forbidden", "the current password is wrong")
    t.refused(operator, 401, "unauthorized", "the admin token is not accepted here")


async def test_a_notice_in_a_link_is_not_shown(browsers: Callable[[], Browser]) -> None:
    alice = browsers()
    await alice.sign_in()
    page = await alice.get("/console/requests", notice="Your account is locked; call us")
    assert "Your account is locked" not in page.text
    assert "call us" not in (await alice.get("/console/sign-in", ended="call us")).text


# ---------------------------------------------------------------- every route


def console_routes() -> list[tuple[str, str]]:
    found = []
    for router in CONSOLE_ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            found.extend((method, route.path) for method in sorted(route.methods))
    return found


async def test_on_every_route_a_member_reaches_nothing_of_anothers(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    """carol (admin of `other`) against bob's grant, token and request in `team`, and
    alice's member record: every console route either refuses or shows nothing of it."""
    bob = browsers()
    await bob.sign_in("bob")
    await bob.get("/console/tokens")
    minted = await bob.post("/console/tokens", scope="read", resource=t.RESOURCE)
    jti = re.search(r"by its jti <code>([^<]+)</code>", minted.text)
    assert jti is not None
    async with t.client(app) as http:
        grant = await http.post(
            "/v1/grants",
            json={"vault": "team", "grantee": "bob", "minutes": 20, "resource": [t.RESOURCE]},
            headers=t.ADMIN,
        )
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/requests")
    await alice.post("/console/requests", vault="team", scope="read", reason="alice-only")
    async with t.client(app) as http:
        listed = await http.get("/v1/requests", headers=t.ADMIN)
    request_id = listed.json()["requests"][0]["id"]
    consent_id = await allowed(app, "alice")
    secrets = {
        "consent_id": consent_id,
        "grant_id": grant.json()["id"],
        "jti": jti.group(1),
        "request_id": request_id,
        "member_id": "alice",
        "name": "console.css",
        "vault": "team",
    }
    carol = browsers()
    await carol.sign_in("carol")
    tried = 0
    for method, path in console_routes():
        if path.startswith(("/console/sign-in", "/console/sign-out", "/console/static")):
            continue
        url = path.format(**secrets)
        await carol.get("/console/me")
        answer = await (carol.post(url) if method == "POST" else carol.get(url))
        tried += 1
        if answer.status_code < 400:
            assert answer.status_code in (200, 303), (method, url)
            for name, value in secrets.items():
                if name not in ("member_id", "name", "vault"):
                    assert value not in answer.text, (method, url, name)
            assert "alice-only" not in answer.text
    assert tried >= 15
    async with t.client(app) as http:
        grants = (await http.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
        tokens = (await http.get("/v1/tokens", headers=t.ADMIN)).json()["tokens"]
        requests = (await http.get("/v1/requests", headers=t.ADMIN)).json()["requests"]
        members = (await http.get("/v1/members", headers=t.ADMIN)).json()["members"]
    assert all(g["revoked"] is None for g in grants)
    assert all(t_["revoked"] is None for t_ in tokens)
    assert requests[0]["state"] == "pending"
    assert "alice" in [m["id"] for m in members]
    async with t.client(app) as http:
        consents = (await http.get("/v1/consents", headers=t.ADMIN)).json()["consents"]
    assert [c["id"] for c in consents] == [consent_id]


VOID = {"meta", "link", "input", "br", "hr", "img", "option"}
"""Elements without a closing tag here (`option` is closed by the next one or left so)."""


class Nesting(HTMLParser):
    """Every element the console's templates open is closed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
            return
        self.open.pop()


def nesting_problems(page: str) -> list[str]:
    parser = Nesting()
    parser.feed(page)
    parser.close()
    return parser.problems + [f"<{tag}> never closed" for tag in parser.open]


async def test_every_page_is_well_formed(browsers: Callable[[], Browser], app: FastAPI) -> None:
    await heartbeat(app, vaults=["team"])
    operator, alice = browsers(), browsers()
    await operator.sign_in_operator()
    await alice.sign_in()
    await alice.get("/console/requests")
    await alice.post("/console/requests", vault="team", scope="read")
    await alice.get("/console/tokens")
    pages = [await alice.post("/console/tokens", scope="read", resource=t.RESOURCE)]
    async with t.client(app) as http:
        grant = await http.post(
            "/v1/grants",
            json={"vault": "team", "grantee": "alice", "minutes": 20},
            headers=t.ADMIN,
        )
    for path in ("/console/me", "/console/requests", "/console/grants", "/console/tokens"):
        pages.append(await alice.get(path))
    for path in (
        "/console/sign-in",
        "/console/requests",
        "/console/members",
        "/console/members/alice",
        "/console/grants",
        f"/console/grants/{grant.json()['id']}/revoke",
        "/console/tokens",
        "/console/nodes",
        "/console/audit",
    ):
        pages.append(await operator.get(path))
    await operator.get("/console/members")
    pages.append(await operator.post("/console/members", id="fay", vaults="team"))
    pages.append(await operator.post("/console/members/alice/remove"))
    for page in pages:
        assert page.status_code == 200, page.url
        assert nesting_problems(page.text) == [], page.url


async def test_a_token_is_minted_within_my_path_rules_and_shown_with_them(
    browsers: Callable[[], Browser], app: FastAPI, clock: t.Clock
) -> None:
    rules = {"team": {"read": ["projects/acme"]}}
    async with t.client(app) as http:
        patched = await http.patch("/v1/members/alice", json={"paths": rules}, headers=t.ADMIN)
        assert patched.status_code == 200, patched.text
    alice = browsers()
    await alice.sign_in()
    assert (
        'Path rules: <span class="small">team: read projects/acme'
        in (await alice.get("/console/me")).text
    )
    await alice.get("/console/tokens")
    wider = await alice.post(
        "/console/tokens", scope="read", resource=t.RESOURCE, read_paths="team:projects"
    )
    t.refused(wider, 403, None, "reach further than the rules of alice")
    await alice.get("/console/tokens")
    minted = await alice.post(
        "/console/tokens", scope="read", resource=t.RESOURCE, read_paths="team:projects/acme/x"
    )
    token = re.search(r'id="token" value="([^"]+)"', minted.text)
    assert token is not None
    async with t.client(app) as http:
        ticket = (await t.verifier(http, clock)).verify(token.group(1))
    assert ticket.reach("team") == Reach.of(["projects/acme/x"])
    listed = (await alice.get("/console/tokens")).text
    assert "team: read projects/acme/x</span>" in listed  # a read token shows no write rule


async def test_my_agent_tokens_leave_out_the_tokens_of_my_oauth_sign_ins(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    await heartbeat(app, vaults=["team"])
    async with t.client(app) as http:
        client_id, proof = await o.register(http), o.pkce()
        code = await o.code_for(http, client_id, proof)
        assert (await o.exchange(http, client_id, code, proof)).status_code == 200
        listed = (await http.get("/v1/tokens", headers=t.ADMIN)).json()["tokens"]
    signed_in = [row["jti"] for row in listed if row["subject"] == "alice"]
    assert len(signed_in) == 1
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/tokens")
    await alice.post("/console/tokens", scope="read", days="3")
    page = (await alice.get("/console/me")).text
    mine = page.split("<h2>My agent tokens</h2>")[1].split("<h2>")[0]
    assert signed_in[0] not in mine
    assert mine.count('<span class="mono">') == 1  # the one minted on the tokens page


async def test_every_page_names_its_icon_which_is_served_from_the_center(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice = browsers()
    page = await alice.get("/console/sign-in")
    assert '<link rel="icon" href="/console/static/favicon.svg"' in page.text
    icon = await alice.http.get("/console/static/favicon.svg")
    assert (icon.status_code, icon.headers["content-type"]) == (200, "image/svg+xml")
    asked = await alice.http.get("/favicon.ico")  # pages that name none, e.g. /authorize
    assert redirect(asked) == (308, "/console/static/favicon.svg")


async def test_my_vaults_keep_their_node_column_on_a_phone(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    await heartbeat(app, vaults=["team"])
    alice = browsers()
    await alice.sign_in()
    page = (await alice.get("/console/me")).text
    vaults = page.split("<h2>My vaults</h2>")[1].split("<h2>")[0]
    assert '<table class="stack">' in vaults  # one card per row below 40rem, every cell kept
    assert '<td data-label="Node">node-a</td>' in vaults
    assert "hide-narrow" not in vaults
