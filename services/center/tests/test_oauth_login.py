"""The login page (docs/design.md#authorize): its headers and CSP, the one-time CSRF token bound
to the request, the stale-form page, the per-IP limit on failed sign-ins, and failures
that look and cost the same whether the name or the password was wrong. Also members'
e-mail addresses, which the page accepts as a login name."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.oauth import testing as o
from center.passwords import Passwords


class CountingPasswords(Passwords):
    """The fast hasher, counting verifications."""

    def __init__(self) -> None:
        super().__init__(o.fast_passwords().hasher)
        self.verified = 0

    async def verify(self, stored: str, password: str) -> bool:
        self.verified += 1
        return await super().verify(stored, password)


@pytest.fixture
def passwords() -> CountingPasswords:
    return CountingPasswords()


@pytest_asyncio.fixture
async def center(
    settings: Settings, clock: t.Clock, passwords: CountingPasswords
) -> AsyncIterator[FastAPI]:
    limited = settings.model_copy(update={"login_rate_limit": "3/m"})
    async with t.running(limited, clock, passwords=passwords) as app:
        yield app


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        await o.add_node(client)
        await o.add_member(client, email="alice@example.org")
        yield client


@pytest_asyncio.fixture
async def params(http: httpx.AsyncClient) -> o.Params:
    return o.authorize_params(await o.register(http), o.pkce())


async def post(
    http: httpx.AsyncClient, form: o.LoginForm, username: str, password: str = o.PASSWORD
) -> httpx.Response:
    """Post the login form; a consent page after it is allowed as offered."""
    body = {"username": username, "password": password, "csrf": form.csrf}
    return await o.answer_consent(http, await http.post(form.action, data=body))


def without_csrf(page: httpx.Response) -> str:
    """The page without what differs on every rendering: its form token and style nonce."""
    return re.sub(r'(name="csrf" value|nonce)="[^"]*"', "", page.text)


# ---------------------------------------------------------------- the page


@pytest.mark.asyncio
async def test_the_page_is_self_contained_with_strict_headers(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    page = await http.get("/authorize", params=params)
    assert page.status_code == 200
    headers = page.headers
    assert headers["cache-control"] == "no-store"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"
    policy = dict(part.split(" ", 1) for part in headers["content-security-policy"].split("; "))
    assert policy["default-src"] == "'none'"
    assert policy["form-action"] == "'self' http://127.0.0.1:33418"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["base-uri"] == "'none'"
    nonce = re.fullmatch(r"'nonce-([\w-]+)'", policy["style-src"])
    assert nonce is not None
    assert f'<style nonce="{nonce[1]}">' in page.text
    assert "<script" not in page.text
    assert not re.search(r'(src|href)="(https?:)?//', page.text)
    for name in ("username", "password", "csrf"):
        assert f'name="{name}"' in page.text
    second = await http.get("/authorize", params=params)
    assert nonce[1] not in second.headers["content-security-policy"]


@pytest.mark.asyncio
async def test_a_registered_client_is_marked_unverified(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    page = await http.get("/authorize", params=params)
    assert "<strong>Test Client</strong>\n(unverified: the application named itself)" in page.text


@pytest.mark.asyncio
async def test_what_the_client_sends_is_escaped(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/register",
        json={"client_name": '<script>alert("x")</script>', "redirect_uris": [o.REDIRECT]},
    )
    client_id = response.json()["client_id"]
    params = o.authorize_params(client_id, o.pkce(), state='"><script>alert(1)</script>')
    page = await http.get("/authorize", params=params)
    assert "<script>" not in page.text
    assert "&lt;script&gt;" in page.text


@pytest.mark.asyncio
async def test_members_sign_in_by_id_or_email_in_any_case(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    for username in ("alice", "Alice@Example.ORG", " alice@example.org "):
        response = await o.sign_in(http, params, username=username)
        assert "code" in o.redirect_params(response), username


# ---------------------------------------------------------------- the CSRF token


@pytest.mark.asyncio
async def test_a_form_works_once(http: httpx.AsyncClient, params: o.Params) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    assert (await post(http, form, "alice")).status_code == 302
    replay = await post(http, form, "alice")
    assert replay.status_code == 400
    assert "location" not in replay.headers
    assert "expired" in replay.text


@pytest.mark.asyncio
async def test_a_failed_sign_in_renders_a_fresh_form(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    failed = await post(http, form, "alice", "not the password")
    assert failed.status_code == 401
    fresh = o.login_form(failed)
    assert fresh.csrf != form.csrf
    t.refused(
        await post(http, form, "alice"),
        400,
        None,
        "Each sign-in form works once and for ten minutes",
    )
    assert (await post(http, fresh, "alice")).status_code == 302


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("state", "another"),
        ("code_challenge", o.pkce().challenge),
        ("scope", "read"),
        ("resource", "https://node-a.test/other"),
    ],
    ids=["state", "code_challenge", "scope", "resource"],  # the same ids in every process
)
async def test_a_form_token_is_bound_to_its_request(
    http: httpx.AsyncClient, params: o.Params, name: str, value: str
) -> None:
    if name == "resource":
        await o.add_node(http, value, "node-b")
    form = o.login_form(await http.get("/authorize", params=params))
    changed = (*((n, v) for n, v in params if n != name), (name, value))
    body = {"username": "alice", "password": o.PASSWORD, "csrf": form.csrf}
    response = await http.post("/authorize", params=changed, data=body)
    assert response.status_code == 400
    assert "expired" in response.text


@pytest.mark.asyncio
async def test_a_form_token_of_another_client_is_refused(http: httpx.AsyncClient) -> None:
    proof = o.pkce()
    mine = o.authorize_params(await o.register(http), proof)
    theirs = o.authorize_params(await o.register(http), proof)
    form = o.login_form(await http.get("/authorize", params=mine))
    body = {"username": "alice", "password": o.PASSWORD, "csrf": form.csrf}
    t.refused(
        await http.post("/authorize", params=theirs, data=body),
        400,
        None,
        "Each sign-in form works once and for ten minutes",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body",
    [
        {"username": "alice", "password": o.PASSWORD},
        {"username": "alice", "password": o.PASSWORD, "csrf": "forged.9999999999.sig"},
        {"username": "alice", "password": o.PASSWORD, "csrf": ""},
    ],
)
async def test_a_missing_or_forged_form_token_gets_the_stale_page(
    http: httpx.AsyncClient, params: o.Params, body: dict[str, str]
) -> None:
    response = await http.post("/authorize", params=params, data=body)
    assert response.status_code == 400
    assert "start the connection again" in response.text


@pytest.mark.asyncio
async def test_a_form_older_than_ten_minutes_is_stale(
    http: httpx.AsyncClient, params: o.Params, clock: t.Clock
) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    clock.advance(601)
    response = await post(http, form, "alice")
    assert response.status_code == 400
    assert "expired" in response.text


@pytest.mark.asyncio
async def test_a_json_post_is_not_a_form(http: httpx.AsyncClient, params: o.Params) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    body = {"username": "alice", "password": o.PASSWORD, "csrf": form.csrf}
    response = await http.post("/authorize", params=params, json=body)
    t.refused(response, 400, None, "Each sign-in form works once and for ten minutes")


# ---------------------------------------------------------------- failures


@pytest.mark.asyncio
async def test_unknown_name_and_wrong_password_fail_alike(
    http: httpx.AsyncClient, params: o.Params, passwords: CountingPasswords, clock: t.Clock
) -> None:
    """One argon2 verification each, the same status, the same page but for the name."""
    await t.add_member(http, "nopass")
    names = ("alice", "mallory", "nobody@example.org", "nopass", "x" * 400)
    bodies = set()
    for username in names:
        clock.advance(60)  # below the failed-sign-in limit
        form = o.login_form(await http.get("/authorize", params=params))
        before = passwords.verified
        page = await post(http, form, username, "a wrong password")
        assert passwords.verified == before + 1, username
        assert page.status_code == 401
        assert "Invalid username or password." in page.text
        bodies.add(without_csrf(page).replace(f'value="{username}"', 'value="NAME"'))
    assert len(bodies) == 1


@pytest.mark.asyncio
async def test_an_oversized_password_fails_like_any_wrong_one(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    t.refused(
        await post(http, form, "alice", "p" * 5000), 401, None, "Invalid username or password."
    )


@pytest.mark.asyncio
async def test_failed_sign_ins_are_limited_per_source_ip(
    center: FastAPI, http: httpx.AsyncClient, params: o.Params, clock: t.Clock
) -> None:
    for _ in range(3):
        form = o.login_form(await http.get("/authorize", params=params))
        t.refused(
            await post(http, form, "alice", "a wrong password"),
            401,
            None,
            "Invalid username or password.",
        )
    form = o.login_form(await http.get("/authorize", params=params))
    limited = await post(http, form, "alice")
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in limited.text
    other = httpx.ASGITransport(app=center, client=("192.0.2.9", 50000))
    async with httpx.AsyncClient(transport=other, base_url=t.ISSUER) as elsewhere:
        assert "code" in o.redirect_params(await o.sign_in(elsewhere, params))
    clock.advance(20)
    assert "code" in o.redirect_params(await post(http, o.login_form(limited), "alice"))


@pytest.mark.asyncio
async def test_successful_sign_ins_do_not_count_against_the_limit(
    http: httpx.AsyncClient, params: o.Params
) -> None:
    for _ in range(6):
        assert "code" in o.redirect_params(await o.sign_in(http, params))


@pytest.mark.asyncio
async def test_sign_ins_are_audited_without_the_name_tried(
    http: httpx.AsyncClient, params: o.Params, capsys: pytest.CaptureFixture[str]
) -> None:
    form = o.login_form(await http.get("/authorize", params=params))
    await post(http, form, "TELLTALE-NAME", "TELLTALE-PASSWORD")
    await o.sign_in(http, params)
    output = capsys.readouterr().out
    assert '"event": "login_failed"' in output
    audit = (await http.get("/v1/audit", headers=t.ADMIN)).text
    assert '"action":"login.failure"' in audit
    assert '"action":"login.success"' in audit
    for leak in ("TELLTALE-NAME", "TELLTALE-PASSWORD", o.PASSWORD):
        assert leak not in output
        assert leak not in audit


# ---------------------------------------------------------------- members' e-mail


@pytest.mark.asyncio
async def test_a_member_email_is_set_changed_and_removed(http: httpx.AsyncClient) -> None:
    shown = (await http.get("/v1/members/alice", headers=t.ADMIN)).json()
    assert shown["email"] == "alice@example.org"
    changed = await http.patch(
        "/v1/members/alice", json={"email": "Alice@New.Example"}, headers=t.ADMIN
    )
    assert changed.json()["email"] == "alice@new.example"
    assert changed.json()["generation"] == shown["generation"]
    removed = await http.patch("/v1/members/alice", json={"email": ""}, headers=t.ADMIN)
    assert removed.json()["email"] is None


@pytest.mark.asyncio
async def test_an_email_names_one_member(http: httpx.AsyncClient) -> None:
    body = {"id": "bob", "vaults": ["team"], "email": "ALICE@example.org"}
    taken = await http.post("/v1/members", json=body, headers=t.ADMIN)
    t.refused(taken, 409, "conflict", "another member already uses this e-mail address")
    await t.add_member(http, "bob", email="bob@example.org")
    moved = await http.patch(
        "/v1/members/bob", json={"email": "alice@example.org"}, headers=t.ADMIN
    )
    t.refused(moved, 409, "conflict", "another member already uses this e-mail address")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "email", ["no-at-sign", "two@@example.org", "a b@example.org", "a@nodot", "a@exa\tmple.org"]
)
async def test_a_malformed_email_is_refused(http: httpx.AsyncClient, email: str) -> None:
    body = {"id": "bob", "vaults": ["team"], "email": email}
    response = await http.post("/v1/members", json=body, headers=t.ADMIN)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_argument"


@pytest.mark.asyncio
async def test_failed_sign_ins_are_limited_per_name_from_any_address(
    center: FastAPI, params: o.Params, clock: t.Clock
) -> None:
    """10 failed attempts per identity in 15 minutes, wherever they come from;
    the id and the e-mail address are separate names, unknown names are limited alike."""

    async def attempt(source: int, username: str, password: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=center, client=(f"192.0.2.{source}", 50000))
        async with httpx.AsyncClient(transport=transport, base_url=t.ISSUER) as http:
            form = o.login_form(await http.get("/authorize", params=params))
            return await post(http, form, username, password)

    for source in range(10):  # a new address each time: the per-IP limit never bites
        t.refused(
            await attempt(source, "alice", "a wrong password"),
            401,
            None,
            "Invalid username or password.",
        )
        t.refused(
            await attempt(source, "nobody", "a wrong password"),
            401,
            None,
            "Invalid username or password.",
        )
    for name in ("alice", "nobody"):
        limited = await attempt(50, name, o.PASSWORD)
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) > 0
    assert "code" in o.redirect_params(await attempt(51, "alice@example.org", o.PASSWORD))
    clock.advance(15 * 60)
    assert "code" in o.redirect_params(await attempt(52, "alice", o.PASSWORD))
