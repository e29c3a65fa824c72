"""The consent page after sign-in: what it shows and sends, Allow and Deny, narrowing
scope and vaults into the token, the remembered consent (skipped, asked again), its
listing and revocation (API), and a form that cannot be replayed, swapped or forged."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.oauth import consent
from center.oauth import testing as o
from center.oauth.consent import Choice, Offer
from tickets import Permissions, TokenError

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
OTHER = "https://elsewhere.example/callback"


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        await o.add_node(client)
        await o.add_member(client, vaults=["team", "work"])
        yield client


async def password(http: httpx.AsyncClient, params: o.Params) -> httpx.Response:
    """Open the login page and sign alice in; the answer (the consent page, or a redirect)."""
    form = o.login_form(await http.get("/authorize", params=params))
    body = {"username": "alice", "password": o.PASSWORD, "csrf": form.csrf}
    return await http.post(form.action, data=body)


async def consent_page(http: httpx.AsyncClient, params: o.Params) -> o.ConsentForm:
    page = await password(http, params)
    assert page.status_code == 200, page.text
    form = o.consent_form(page)
    assert form is not None, page.text
    return form


async def post(http: httpx.AsyncClient, action: str, fields: list[tuple[str, str]]) -> Any:
    return await http.post(action, content=urlencode(fields), headers=FORM)


async def tokens(
    http: httpx.AsyncClient, client_id: str, proof: o.Pkce, response: httpx.Response
) -> dict[str, Any]:
    exchanged = await o.exchange(http, client_id, o.redirect_params(response)["code"], proof)
    assert exchanged.status_code == 200, exchanged.text
    issued: dict[str, Any] = exchanged.json()
    return issued


async def consents(http: httpx.AsyncClient, headers: dict[str, str] = t.ADMIN) -> list[Any]:
    listed = await http.get("/v1/consents", headers=headers)
    assert listed.status_code == 200, listed.text
    found: list[Any] = listed.json()["consents"]
    return found


async def audit(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.asyncio
async def test_the_page_shows_client_origin_scopes_and_vaults_under_strict_headers(
    http: httpx.AsyncClient,
) -> None:
    params = o.authorize_params(await o.register(http), o.pkce())
    page = await password(http, params)
    assert page.status_code == 200
    assert "<strong>Test Client</strong>\n(unverified: the application named itself)" in page.text
    assert "you return to <strong>http://127.0.0.1:33418</strong>" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    policy = page.headers["content-security-policy"]
    assert "form-action 'self' http://127.0.0.1:33418;" in policy
    assert "frame-ancestors 'none'" in policy
    assert "<script" not in page.text
    form = o.consent_form(page)
    assert form is not None
    assert form.scopes == [("read write", True), ("read", False), ("write", False)]
    assert form.vaults == [("team", True), ("work", True)]
    assert form.hidden["member"] == "alice"
    assert 'value="deny"' in page.text
    assert 'value="allow"' in page.text


@pytest.mark.asyncio
async def test_deny_sends_access_denied_with_the_state_and_keeps_nothing(
    http: httpx.AsyncClient,
) -> None:
    client_id = await o.register(http)
    form = await consent_page(http, o.authorize_params(client_id, o.pkce(), state="s-1"))
    denied = await post(http, form.action, form.fields("deny"))
    back = o.redirect_params(denied)
    assert denied.headers["location"].startswith(o.REDIRECT + "?")
    assert back["error"] == "access_denied"
    assert back["state"] == "s-1"
    assert back["iss"] == t.ISSUER
    assert "code" not in back
    assert await consents(http) == []
    record = (await audit(http))[-1]
    assert (record["action"], record["object"]) == ("consent.deny", f"client:{client_id}")
    assert record["subject"] == "alice"


@pytest.mark.asyncio
async def test_allow_issues_what_was_offered_and_remembers_it(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    issued = await tokens(http, client_id, proof, await post(http, form.action, form.fields()))
    ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
    assert ticket.granted == {"read", "write"}
    assert ticket.vaults == ("team", "work")
    [kept] = await consents(http)
    assert (kept["member"], kept["client_id"], kept["client_name"]) == (
        "alice",
        client_id,
        "Test Client",
    )
    assert (kept["origin"], kept["scope"], kept["vaults"]) == (
        "http://127.0.0.1:33418",
        "read write",
        ["team", "work"],
    )
    record = next(r for r in reversed(await audit(http)) if r["action"] == "consent.give")
    assert (record["scope"], record["object"]) == ("read_write", f"client:{client_id}")


@pytest.mark.asyncio
async def test_a_narrowed_consent_gives_a_narrowed_token_and_refresh_keeps_it(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    allowed = await post(http, form.action, form.fields(scope="read", vaults=["work"]))
    issued = await tokens(http, client_id, proof, allowed)
    assert issued["scope"] == "read"
    verifier = await t.verifier(http, clock)
    ticket = verifier.verify(issued["access_token"])
    assert ticket.granted == {"read"}
    assert ticket.vaults == ("work",)
    renewed = await o.refresh(http, client_id, issued["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    again = verifier.verify(renewed.json()["access_token"])
    assert again.granted == {"read"}
    assert again.vaults == ("work",)
    listed = (await http.get("/v1/tokens", headers=t.ADMIN)).json()["tokens"]
    assert {tuple(row["vaults"]) for row in listed} == {("work",)}
    record = next(r for r in reversed(await audit(http)) if r["action"] == "consent.give")
    assert record["vault"] == "work"
    assert "narrowed from read write in team, work" in record["reason"]


@pytest.mark.asyncio
async def test_the_next_sign_in_within_the_consent_skips_the_page(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id = await o.register(http)
    form = await consent_page(http, o.authorize_params(client_id, o.pkce()))
    await post(http, form.action, form.fields(scope="read", vaults=["team"]))
    for scope in (None, "read"):
        proof = o.pkce()
        direct = await password(http, o.authorize_params(client_id, proof, scope=scope))
        assert direct.status_code == 302, direct.text
        issued = await tokens(http, client_id, proof, direct)
        ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
        assert ticket.granted == {"read"}
        assert ticket.vaults == ("team",)
    [kept] = await consents(http)
    assert kept["used"] == clock()


@pytest.mark.asyncio
async def test_a_step_up_beyond_the_narrowed_choice_asks_again(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    """Narrowed to read, the client meets a 403 insufficient_scope and asks for read and
    write: answering with read again would loop without the member ever seeing it."""
    client_id = await o.register(http)
    form = await consent_page(http, o.authorize_params(client_id, o.pkce(), scope="read write"))
    await post(http, form.action, form.fields(scope="read"))
    proof = o.pkce()
    stepped = await consent_page(http, o.authorize_params(client_id, proof, scope="read write"))
    issued = await tokens(
        http, client_id, proof, await post(http, stepped.action, stepped.fields())
    )
    assert (await t.verifier(http, clock)).verify(issued["access_token"]).granted == {
        "read",
        "write",
    }
    proof = o.pkce()
    direct = await password(http, o.authorize_params(client_id, proof, scope="read write"))
    assert direct.status_code == 302, direct.text  # the new answer is remembered


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param({"scope": "read"}, {}, id="wider scope"),
        pytest.param({}, {"redirect_uri": OTHER}, id="another redirect origin"),
    ],
)
@pytest.mark.asyncio
async def test_a_wider_request_or_another_origin_asks_again(
    http: httpx.AsyncClient, first: dict[str, str], second: dict[str, str]
) -> None:
    client_id = await o.register(http, [o.REDIRECT, OTHER])
    form = await consent_page(http, o.authorize_params(client_id, o.pkce(), **first))
    assert "code" in o.redirect_params(await post(http, form.action, form.fields()))
    asked = await password(http, o.authorize_params(client_id, o.pkce(), **second))
    assert asked.status_code == 200
    assert o.consent_form(asked) is not None


@pytest.mark.asyncio
async def test_a_vault_the_member_gained_asks_again(http: httpx.AsyncClient) -> None:
    client_id = await o.register(http)
    form = await consent_page(http, o.authorize_params(client_id, o.pkce()))
    await post(http, form.action, form.fields())
    body = {"vaults": ["team", "work", "lab"]}
    changed = await http.patch("/v1/members/alice", json=body, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    again = await consent_page(http, o.authorize_params(client_id, o.pkce()))
    assert [name for name, _ in again.vaults] == ["lab", "team", "work"]


@pytest.mark.asyncio
async def test_a_member_who_lost_a_vault_gets_the_rest_without_being_asked(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    await post(http, form.action, form.fields())
    changed = await http.patch("/v1/members/alice", json={"vaults": ["team"]}, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    direct = await password(http, o.authorize_params(client_id, proof))
    issued = await tokens(http, client_id, proof, direct)
    assert (await t.verifier(http, clock)).verify(issued["access_token"]).vaults == ("team",)


@pytest.mark.asyncio
async def test_revoking_asks_again_and_ends_the_clients_sign_ins(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    issued = await tokens(http, client_id, proof, await post(http, form.action, form.fields()))
    pending_proof = o.pkce()
    pending = await password(http, o.authorize_params(client_id, pending_proof))
    [kept] = await consents(http)

    revoked = await http.delete(f"/v1/consents/{kept['id']}", headers=t.ADMIN)
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["ended_sign_ins"] == 1
    assert await consents(http) == []
    refused = await o.refresh(http, client_id, issued["refresh_token"])
    assert refused.json()["error"] == "invalid_grant"
    with pytest.raises(TokenError) as dead:
        (await t.verifier(http, clock)).verify(issued["access_token"])
    assert dead.value.reason == "revoked"
    code = o.redirect_params(pending)["code"]
    assert (await o.exchange(http, client_id, code, pending_proof)).json()["error"] == (
        "invalid_grant"
    )
    assert o.consent_form(await password(http, o.authorize_params(client_id, o.pkce())))
    actions = [r["action"] for r in await audit(http)]
    assert actions.index("consent.revoke") > actions.index("token.revoke")
    again = await http.delete(f"/v1/consents/{kept['id']}", headers=t.ADMIN)
    t.refused(again, 404, "not_found", "consent")


@pytest.mark.asyncio
async def test_revoking_one_clients_consent_leaves_the_other_clients_sign_ins(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    issued: dict[str, dict[str, Any]] = {}
    for name in ("first", "second"):
        client_id, proof = await o.register(http), o.pkce()
        form = await consent_page(http, o.authorize_params(client_id, proof))
        answer = await post(http, form.action, form.fields())
        issued[name] = {"client": client_id, **await tokens(http, client_id, proof, answer)}
    first = next(c for c in await consents(http) if c["client_id"] == issued["first"]["client"])
    revoked = await http.delete(f"/v1/consents/{first['id']}", headers=t.ADMIN)
    assert revoked.json()["ended_sign_ins"] == 1
    kept = issued["second"]
    assert (await t.verifier(http, clock)).verify(kept["access_token"]).principal == "alice"
    renewed = await o.refresh(http, kept["client"], kept["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    assert [c["client_id"] for c in await consents(http)] == [kept["client"]]


@pytest.mark.asyncio
async def test_a_member_lists_and_revokes_only_its_own(http: httpx.AsyncClient) -> None:
    bob = await t.add_member(http, "bob", ["team"], password=o.PASSWORD)
    client_id = await o.register(http)
    for who in ("alice", "bob"):
        await o.sign_in(http, o.authorize_params(client_id, o.pkce()), username=who)
    alice = t.bearer(await member_credential(http, "alice"))
    mine = await consents(http, alice)
    assert [c["member"] for c in mine] == ["alice"]
    assert [c["member"] for c in await consents(http)] == ["alice", "bob"]
    only_bob = await http.get("/v1/consents", params={"member": "bob"}, headers=t.ADMIN)
    assert [c["member"] for c in only_bob.json()["consents"]] == ["bob"]
    peek = await http.get("/v1/consents", params={"member": "bob"}, headers=alice)
    t.refused(peek, 403, "forbidden", "only its own")
    bobs = next(c for c in await consents(http) if c["member"] == "bob")
    t.refused(await http.delete(f"/v1/consents/{bobs['id']}", headers=alice), 404, "not_found")
    own = await http.delete(f"/v1/consents/{mine[0]['id']}", headers=alice)
    assert own.status_code == 200, own.text
    assert await consents(http, t.bearer(bob)) != []


async def member_credential(http: httpx.AsyncClient, member_id: str) -> str:
    body = {"rotate_credential": True}
    changed = await http.patch(f"/v1/members/{member_id}", json=body, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    credential: str = changed.json()["credential"]
    return credential


@pytest.mark.asyncio
async def test_removing_a_member_forgets_its_consents(http: httpx.AsyncClient) -> None:
    await o.sign_in(http, o.authorize_params(await o.register(http), o.pkce()))
    assert len(await consents(http)) == 1
    assert (await http.delete("/v1/members/alice", headers=t.ADMIN)).status_code == 200
    assert await consents(http) == []


# ---------------------------------------------------------------- the form's token


@pytest.mark.asyncio
async def test_a_consent_form_works_once(http: httpx.AsyncClient) -> None:
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    assert "code" in o.redirect_params(await post(http, form.action, form.fields()))
    replay = await post(http, form.action, form.fields())
    t.refused(replay, 400, None, "This consent form has expired")
    assert "location" not in replay.headers


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "swap",
    [
        pytest.param({"state": "another"}, id="state"),
        pytest.param({"scope": "read"}, id="scope"),
        pytest.param({"redirect_uri": OTHER}, id="redirect_uri"),
    ],
)
@pytest.mark.asyncio
async def test_the_decision_is_bound_to_the_request_that_was_shown(
    http: httpx.AsyncClient, swap: dict[str, str]
) -> None:
    client_id, proof = await o.register(http, [o.REDIRECT, OTHER]), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    swapped = o.authorize_params(client_id, proof, **swap)
    answer = await post(http, f"{t.ISSUER}/authorize?{urlencode(swapped)}", form.fields())
    t.refused(answer, 400, None, "This consent form has expired")
    assert await consents(http) == []


@pytest.mark.asyncio
async def test_another_client_cannot_take_the_decision(http: httpx.AsyncClient) -> None:
    proof = o.pkce()
    form = await consent_page(http, o.authorize_params(await o.register(http), proof))
    other = o.authorize_params(await o.register(http), proof)
    answer = await post(http, f"{t.ISSUER}/authorize?{urlencode(other)}", form.fields())
    t.refused(answer, 400, None, "This consent form has expired")


@pytest.mark.asyncio
async def test_the_form_names_the_member_it_was_shown_to(http: httpx.AsyncClient) -> None:
    await t.add_member(http, "bob", ["team", "work"], role="editor", scope="read_write")
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    fields = [(k, "bob" if k == "member" else v) for k, v in form.fields()]
    t.refused(await post(http, form.action, fields), 400, None, "expired")
    forged = [(k, "x.1.y" if k == "consent" else v) for k, v in form.fields()]
    t.refused(await post(http, form.action, forged), 400, None, "expired")


@pytest.mark.asyncio
async def test_a_new_password_meanwhile_voids_the_form(http: httpx.AsyncClient) -> None:
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    body = {"password": "a completely new passphrase"}
    assert (await http.patch("/v1/members/alice", json=body, headers=t.ADMIN)).status_code == 200
    t.refused(await post(http, form.action, form.fields()), 400, None, "expired")


@pytest.mark.asyncio
async def test_the_login_forms_token_does_not_pass_for_a_consent(
    http: httpx.AsyncClient,
) -> None:
    params = o.authorize_params(await o.register(http), o.pkce())
    login = o.login_form(await http.get("/authorize", params=params))
    fields = [("consent", login.csrf), ("member", "alice"), ("decision", "allow")]
    fields += [("scope", "read write"), ("vault", "team")]
    t.refused(await post(http, login.action, fields), 400, None, "expired")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("scope", "vaults", "words"),
    [
        pytest.param("read write delete", ["team"], "access levels offered", id="wider scope"),
        pytest.param("read", [], "at least one vault", id="no vault"),
        pytest.param("read", ["lab"], "among the vaults offered", id="vault not offered"),
        pytest.param("read", ["Not A Vault"], "among the vaults offered", id="bad name"),
    ],
)
@pytest.mark.asyncio
async def test_a_choice_outside_the_offer_shows_the_page_again(
    http: httpx.AsyncClient, scope: str, vaults: list[str], words: str
) -> None:
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    again = await post(http, form.action, form.fields(scope=scope, vaults=vaults))
    assert again.status_code == 400
    assert words in again.text
    fresh = o.consent_form(again)
    assert fresh is not None
    assert fresh.hidden["consent"] != form.hidden["consent"]
    shown = "read write" if scope not in ("read write", "read") else scope
    assert [value for value, checked in fresh.scopes if checked] == [shown]  # as chosen
    assert [name for name, checked in fresh.vaults if checked] == [
        name for name in ("team", "work") if name in vaults
    ]
    replayed = await post(http, form.action, form.fields(scope=scope, vaults=vaults))
    t.refused(replayed, 400, None, "This consent form has expired")  # no new form for it
    retried = await post(http, fresh.action, fresh.fields(scope="read", vaults=["team"]))
    assert "code" in o.redirect_params(retried)


@pytest.mark.asyncio
async def test_an_unknown_decision_or_a_repeated_field_is_refused(
    http: httpx.AsyncClient,
) -> None:
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    odd = [(k, "maybe" if k == "decision" else v) for k, v in form.fields()]
    t.refused(await post(http, form.action, odd), 400, None, "expired")
    twice = [*form.fields(), ("scope", "read")]
    t.refused(await post(http, form.action, twice), 400, None, "expired")


# ---------------------------------------------------------------- rules and every vault


@pytest.mark.asyncio
async def test_the_page_shows_the_members_path_rules_and_the_token_keeps_them(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    rules = {"team": {"read": ["projects"], "exclude": ["projects/hr"]}}
    body = {"paths": rules}
    assert (await http.patch("/v1/members/alice", json=body, headers=t.ADMIN)).status_code == 200
    client_id, proof = await o.register(http), o.pkce()
    page = await password(http, o.authorize_params(client_id, proof))
    assert "Only: read projects; write projects; except projects/hr" in page.text
    form = o.consent_form(page)
    assert form is not None
    issued = await tokens(http, client_id, proof, await post(http, form.action, form.fields()))
    ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
    reach = ticket.paths.reach("team")
    assert reach is not None
    assert (reach.read, reach.exclude) == (("projects",), ("projects/hr",))


@pytest.mark.asyncio
async def test_a_member_of_every_vault_may_pick_every_vault_or_some(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    await t.add_member(http, "olga", ["*"], role="owner", scope="allow_all", password=o.PASSWORD)
    credential = await o.add_node(http, "https://node-b.test/mcp", "node-b")
    beat = {"vaults": ["lab", "team"]}
    answer = await http.post("/v1/nodes/heartbeat", json=beat, headers=t.bearer(credential))
    assert answer.status_code == 200, answer.text
    client_id, proof = await o.register(http), o.pkce()
    page = await password_as(http, o.authorize_params(client_id, proof), "olga")
    shown = o.consent_form(page)
    assert shown is not None
    assert shown.vaults == [("*", True), ("lab", False), ("team", False)]
    assert "Every vault, now and later" in page.text
    chosen = await post(http, shown.action, shown.fields(scope="read", vaults=["lab"]))
    issued = await tokens(http, client_id, proof, chosen)
    ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
    assert ticket.granted == {"read"}
    assert ticket.vaults == ("lab",)


async def password_as(http: httpx.AsyncClient, params: o.Params, username: str) -> Any:
    form = o.login_form(await http.get("/authorize", params=params))
    body = {"username": username, "password": o.PASSWORD, "csrf": form.csrf}
    return await http.post(form.action, data=body)


@pytest.mark.asyncio
async def test_no_consent_token_or_code_reaches_the_log(
    http: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    form = await consent_page(http, o.authorize_params(await o.register(http), o.pkce()))
    allowed = await post(http, form.action, form.fields())
    code = o.redirect_params(allowed)["code"]
    logged = capsys.readouterr().out
    assert "consent_given" in logged
    nonce = form.hidden["consent"].split(".")[0]
    assert re.search(re.escape(nonce), logged) is None
    assert code not in logged


@pytest.mark.asyncio
async def test_a_consent_post_for_an_unknown_client_or_redirect_shows_no_consent_page(
    http: httpx.AsyncClient,
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    form = await consent_page(http, o.authorize_params(client_id, proof))
    for params, words in (
        (o.authorize_params("not-a-client", proof), "Unknown application"),
        (o.authorize_params(client_id, proof, redirect_uri=OTHER), "Unregistered redirect"),
    ):
        answer = await post(http, f"{t.ISSUER}/authorize?{urlencode(params)}", form.fields())
        t.refused(answer, 400, None, words)
        assert "location" not in answer.headers
    assert "code" in o.redirect_params(await post(http, form.action, form.fields()))


# ---------------------------------------------------------------- the rules, unit by unit

RW: Permissions = frozenset({"read", "write"})
READ: Permissions = frozenset({"read"})


def test_the_scopes_offered_run_from_the_asked_one_down() -> None:
    everything: Permissions = frozenset({"read", "write", "delete", "manage"})
    assert consent.scope_options(everything)[:3] == [
        everything,
        frozenset({"read", "write", "delete"}),
        RW,
    ]
    assert consent.scope_options(READ) == [READ]
    odd: Permissions = frozenset({"read", "delete"})  # no wire scope is exactly this
    assert consent.scope_options(odd) == [odd, READ]


@pytest.mark.parametrize(
    ("first", "second", "both"),
    [
        (["*"], ["a", "b"], ("a", "b")),
        (["a", "b"], ["*"], ("a", "b")),
        (["*"], ["*"], ("*",)),
        (["b", "a"], ["a", "c"], ("a",)),
        (["a"], ["b"], ()),
    ],
)
def test_vaults_meet_with_every_vault_as_the_whole(
    first: list[str], second: list[str], both: tuple[str, ...]
) -> None:
    assert consent.meet(first, second) == both


def test_every_vault_lies_within_every_vault_only() -> None:
    assert consent.within(["a"], ["*"])
    assert consent.within(["*"], ["*"])
    assert not consent.within(["*"], ["a", "b"])
    assert consent.within(["a"], ["a", "b"])
    assert not consent.within(["a", "c"], ["a", "b"])


def test_a_choice_is_within_the_offer_and_every_vault_covers_the_rest() -> None:
    made = Offer(RW, ("*",))
    assert consent.choose(made, "read", ["lab", "team", "lab"]) == Choice(READ, ("lab", "team"))
    assert consent.choose(made, "read write", ["team", "*"]) == Choice(RW, ("*",))
    assert consent.choose(made, "delete", ["team"]) == "Choose one of the access levels offered."
    assert consent.choose(made, "bogus", ["team"]) == "Choose one of the access levels offered."
    assert consent.choose(Offer(RW, ("team",)), "read", ["*"]) == (
        "Choose among the vaults offered."
    )
    many = [f"v{n}" for n in range(consent.MAX_VAULTS + 1)]
    assert consent.choose(made, "read", many) == "Choose among the vaults offered."
