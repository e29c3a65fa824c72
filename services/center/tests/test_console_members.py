"""The console's members pages: the list, adding (credential shown once), changing with
a confirmation of what it revokes, setting a password, removing; the operator's only."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.console.testing import SENT_TO_SIGN_IN, Browser, redirect
from center.oauth import testing as o

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock, passwords=o.fast_passwords()) as running:
        async with t.client(running) as http:
            await o.add_node(http)
            await o.add_member(http, "alice", role="editor", scope="read_write")
            await o.add_member(http, "bob", role="admin", scope="read_write_delete")
        yield running


@pytest_asyncio.fixture
async def operator(browsers: Callable[[], Browser]) -> Browser:
    browser = browsers()
    assert (await browser.sign_in_operator()).status_code == 303
    return browser


async def audit(app: FastAPI) -> list[dict[str, object]]:
    async with t.client(app) as http:
        exported = await http.get("/v1/audit", headers=t.ADMIN)
    return [json.loads(line) for line in exported.text.splitlines()]


async def test_the_list_shows_role_scope_vaults_generation_and_last_sign_in(
    operator: Browser, browsers: Callable[[], Browser]
) -> None:
    await browsers().sign_in("alice")
    page = await operator.get("/console/members")
    assert page.status_code == 200
    row = re.search(r"<a href=\"/console/members/alice\">alice</a>.*?</tr>", page.text, re.S)
    assert row is not None
    for text in ("editor", "read_write", "team", "<time datetime="):
        assert text in row.group(0)


async def test_adding_a_member_shows_its_credential_once_and_it_works(
    operator: Browser, app: FastAPI
) -> None:
    await operator.get("/console/members")
    created = await operator.post(
        "/console/members", id="dora", vaults="team, ops", role="reader", scope="read"
    )
    assert created.status_code == 200
    assert created.headers["cache-control"] == "no-store"
    credential = re.search(r'value="(sbm_[^"]+)"', created.text)
    assert credential is not None
    assert 'data-copy="credential"' in created.text
    async with t.client(app) as http:
        session = await http.get("/v1/session", headers=t.bearer(credential.group(1)))
    assert session.json()["vaults"] == ["ops", "team"]
    assert credential.group(1) not in (await operator.get("/console/members/dora")).text
    added = [r for r in await audit(app) if r["action"] == "member.add"][-1]
    assert (added["subject"], added["channel"]) == ("dora", "console")


async def test_a_change_of_authority_lists_what_it_revokes_before_it_happens(
    operator: Browser, app: FastAPI
) -> None:
    async with t.client(app) as http:
        issued = await http.post(
            "/v1/grants",
            json={"vault": "team", "grantee": "alice", "minutes": 30, "resource": [t.RESOURCE]},
            headers=t.ADMIN,
        )
    grant_id = issued.json()["id"]
    await operator.get("/console/members/alice")
    asked = await operator.post(
        "/console/members/alice", role="reader", scope="read", vaults="team", email=""
    )
    assert asked.status_code == 200
    assert "Change alice?" in asked.text
    assert grant_id in asked.text
    async with t.client(app) as http:
        still = (await http.get("/v1/members/alice", headers=t.ADMIN)).json()
    assert still["role"] == "editor"
    confirmed = await operator.post(
        "/console/members/alice",
        role="reader",
        scope="read",
        vaults="team",
        email="",
        confirm="yes",
    )
    assert confirmed.status_code == 303
    async with t.client(app) as http:
        now = (await http.get("/v1/members/alice", headers=t.ADMIN)).json()
        grants = (await http.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
    assert (now["role"], now["scope"]) == ("reader", "read")
    assert next(g for g in grants if g["id"] == grant_id)["revoked"] is not None


async def test_an_e_mail_change_needs_no_confirmation(operator: Browser, app: FastAPI) -> None:
    await operator.get("/console/members/alice")
    saved = await operator.post(
        "/console/members/alice",
        role="editor",
        scope="read_write",
        vaults="team",
        email="al@example.org",
    )
    assert saved.status_code == 303
    async with t.client(app) as http:
        member = (await http.get("/v1/members/alice", headers=t.ADMIN)).json()
    assert member["email"] == "al@example.org"


async def test_a_new_password_ends_the_members_console_session(
    operator: Browser, browsers: Callable[[], Browser]
) -> None:
    alice = browsers()
    await alice.sign_in()
    await operator.get("/console/members/alice")
    new = "a brand new password, long enough"
    changed = await operator.post("/console/members/alice/password", password=new)
    assert changed.status_code == 303
    assert changed.headers["location"].startswith("/console/members/alice?notice=")
    assert "New password set" in (await operator.get(changed.headers["location"])).text
    assert redirect(await alice.get("/console/requests")) == SENT_TO_SIGN_IN
    assert redirect(await alice.sign_in(password=new)) == (303, "/console/requests")


async def test_removal_is_confirmed_first(operator: Browser, app: FastAPI) -> None:
    await operator.get("/console/members/bob")
    asked = await operator.post("/console/members/bob/remove")
    assert "Remove bob?" in asked.text
    async with t.client(app) as http:
        assert (await http.get("/v1/members/bob", headers=t.ADMIN)).status_code == 200
    done = await operator.post("/console/members/bob/remove", confirm="yes")
    assert done.status_code == 303
    async with t.client(app) as http:
        t.refused(
            await http.get("/v1/members/bob", headers=t.ADMIN), 404, "not_found", "no member 'bob'"
        )


async def test_a_member_reaches_no_members_page(browsers: Callable[[], Browser]) -> None:
    bob = browsers()
    await bob.sign_in("bob")
    t.refused(
        await bob.get("/console/members"), 403, None, "only the operator's admin token may do this"
    )
    t.refused(
        await bob.get("/console/members/alice"),
        403,
        None,
        "only the operator's admin token may do this",
    )
    for path, form in (
        ("/console/members", {"id": "eve", "vaults": "team"}),
        ("/console/members/alice", {"role": "owner", "confirm": "yes"}),
        ("/console/members/alice/password", {"password": "x" * 20}),
        ("/console/members/alice/remove", {"confirm": "yes"}),
    ):
        await bob.get("/console/requests")
        refused = await bob.post(path, **form)
        assert refused.status_code == 403, path
        assert "only the operator" in refused.text


async def test_an_oauth_sign_in_counts_as_the_last_sign_in(app: FastAPI, clock: t.Clock) -> None:
    async with t.client(app) as http:
        client_id = await o.register(http)
        clock.advance(90)
        await o.code_for(http, client_id, o.pkce())
        member = (await http.get("/v1/members/alice", headers=t.ADMIN)).json()
    assert member["last_sign_in"] == int(clock())


async def test_a_password_set_here_keeps_its_spaces_as_the_login_page_does(
    operator: Browser, browsers: Callable[[], Browser]
) -> None:
    spaced = "  spaces around this password  "
    await operator.get("/console/members/alice")
    assert (
        await operator.post("/console/members/alice/password", password=spaced)
    ).status_code == 303
    alice = browsers()
    t.refused(
        await alice.sign_in(password=spaced.strip()),
        401,
        None,
        "Invalid member id, e-mail or password.",
    )
    assert redirect(await alice.sign_in(password=spaced)) == (303, "/console/requests")


async def test_a_member_is_added_with_path_rules_and_the_list_shows_them(
    operator: Browser, app: FastAPI
) -> None:
    await operator.get("/console/members")
    created = await operator.post(
        "/console/members",
        id="dora",
        vaults="team",
        read_paths="team:projects/acme",
        write_paths="team:projects/acme/inbox",
        exclude_paths="team:projects/acme/hr",
    )
    assert created.status_code == 200, created.text
    listed = await operator.get("/console/members")
    row = re.search(r"<a href=\"/console/members/dora\">dora</a>.*?</tr>", listed.text, re.S)
    assert row is not None
    assert (
        "team: read projects/acme; write projects/acme/inbox; except projects/acme/hr"
        in row.group(0)
    )
    async with t.client(app) as http:
        shown = (await http.get("/v1/members/dora", headers=t.ADMIN)).json()
    assert shown["paths"]["team"]["exclude"] == ["projects/acme/hr"]


async def test_a_bad_path_rule_is_refused_on_the_page_with_the_reason(operator: Browser) -> None:
    await operator.get("/console/members")
    refused = await operator.post(
        "/console/members", id="dora", vaults="team", read_paths="team:../secrets"
    )
    t.refused(refused, 400, None, "path rule '../secrets' leaves the vault")


async def test_changing_path_rules_confirms_then_bumps_the_generation(
    operator: Browser, app: FastAPI
) -> None:
    page = await operator.get("/console/members/alice")
    assert 'name="read_paths" value=""' in page.text
    form = {"role": "editor", "scope": "read_write", "vaults": "team", "email": ""}
    asked = await operator.post(
        "/console/members/alice", **form, read_paths="team:projects", write_paths=""
    )
    assert "Change alice?" in asked.text
    done = await operator.post(
        "/console/members/alice",
        **form,
        read_paths="team:projects",
        write_paths="",
        exclude_paths="",
        confirm="yes",
    )
    assert done.status_code == 303, done.text
    page = await operator.get("/console/members/alice")
    assert 'name="read_paths" value="team:projects"' in page.text
    changes = [r for r in await audit(app) if r["action"] == "member.set"]
    assert json.loads(str(changes[-1]["paths"]))["team"]["read"] == ["projects"]
    async with t.client(app) as http:
        assert (await http.get("/v1/members/alice", headers=t.ADMIN)).json()["generation"] == 2


async def test_a_member_reading_the_whole_vault_but_one_folder_is_shown_and_kept(
    operator: Browser, app: FastAPI
) -> None:
    await operator.get("/console/members")
    created = await operator.post(
        "/console/members", id="wren", vaults="team", exclude_paths="team:hr", write_paths=""
    )
    assert created.status_code == 200, created.text
    page = await operator.get("/console/members/wren")
    assert "read the whole vault; write the whole vault; except hr" in page.text
    assert 'name="read_paths" value=""' in page.text
    assert 'name="exclude_paths" value="team:hr"' in page.text
    async with t.client(app) as http:
        shown = (await http.get("/v1/members/wren", headers=t.ADMIN)).json()
    assert shown["paths"] == {"team": {"read": None, "write": None, "exclude": ["hr"]}}
