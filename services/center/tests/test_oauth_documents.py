"""Client ID metadata documents: a client known by the https URL of its metadata signs in
like a registered one, and the fetch refuses every SSRF target class, oversize and bad
documents, and redirects to another host, without echoing what it fetched."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.oauth import documents
from center.oauth import testing as o
from center.oauth.documents import DocumentError, Fetcher

pytestmark = pytest.mark.asyncio
LEAK = "do-not-echo-7f3a"


@pytest.fixture
def prefix() -> str:
    """A fresh path prefix per test, so the shared server's hit counts are this test's."""
    return secrets.token_hex(4)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[o.DocumentServer]:
    with o.document_server(tmp_path_factory.mktemp("documents")) as running:
        yield running


def doc(url: str, **fields: Any) -> dict[str, Any]:
    return {"client_id": url, "client_name": "Doc Client", "redirect_uris": [o.REDIRECT], **fields}


def payload(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def fetcher(server: o.DocumentServer, *hosts: str) -> Fetcher:
    return Fetcher(hosts or ("127.0.0.1",), ca_file=server.ca_file)


@pytest_asyncio.fixture
async def center(
    settings: Settings, clock: t.Clock, server: o.DocumentServer
) -> AsyncIterator[FastAPI]:
    allowed = settings.model_copy(
        update={
            "oauth_client_metadata_hosts": ("127.0.0.1",),
            "oauth_client_metadata_ca_file": server.ca_file,
        }
    )
    async with t.running(allowed, clock, passwords=o.fast_passwords()) as app:
        yield app


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        await o.add_node(client)
        await o.add_member(client)
        yield client


async def test_the_metadata_says_client_id_urls_are_supported(http: httpx.AsyncClient) -> None:
    metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
    assert metadata["client_id_metadata_document_supported"] is True


async def test_a_client_known_by_its_document_signs_in_and_is_cached(
    http: httpx.AsyncClient, server: o.DocumentServer, prefix: str
) -> None:
    url = server.url(f"/{prefix}/cached/client.json")
    server.publish(f"/{prefix}/cached/client.json", doc(url), **{"Cache-Control": "max-age=600"})
    proof = o.pkce()
    page = await http.get("/authorize", params=o.authorize_params(url, proof))
    assert page.status_code == 200, page.text
    assert "Doc Client</strong>\n(as described at <strong>127.0.0.1</strong>)" in page.text
    assert "unverified" not in page.text
    form = o.login_form(page)
    body = {"username": "alice", "password": o.PASSWORD, "csrf": form.csrf}
    asked = await http.post(form.action, data=body)
    assert "Doc Client</strong>\n(as described at <strong>127.0.0.1</strong>)" in asked.text
    code = o.redirect_params(await o.answer_consent(http, asked))["code"]
    tokens = await o.exchange(http, url, code, proof)
    assert tokens.status_code == 200, tokens.text
    assert payload(tokens.json()["access_token"])["client_id"] == url
    assert server.hits[f"/{prefix}/cached/client.json"] == 1  # max-age=600: fetched once


async def test_a_no_store_document_is_fetched_at_every_authorization(
    http: httpx.AsyncClient, server: o.DocumentServer, prefix: str
) -> None:
    url = server.publish(f"/{prefix}/fresh/client.json", b"")
    server.publish(f"/{prefix}/fresh/client.json", doc(url), **{"Cache-Control": "no-store"})
    for _ in range(2):
        page = await http.get("/authorize", params=o.authorize_params(url, o.pkce()))
        assert page.status_code == 200, page.text
    assert server.hits[f"/{prefix}/fresh/client.json"] == 2


async def test_a_redirect_uri_the_document_does_not_list_is_refused(
    http: httpx.AsyncClient, server: o.DocumentServer
) -> None:
    url = server.publish("/narrow/client.json", b"")
    server.publish("/narrow/client.json", doc(url, redirect_uris=["https://app.example/cb"]))
    page = await http.get("/authorize", params=o.authorize_params(url, o.pkce()))
    assert page.status_code == 400
    assert "Unregistered redirect address" in page.text


@pytest.mark.parametrize(
    ("name", "document", "headers", "reason"),
    [
        ("big", b'{"client_id": "' + b"x" * documents.MAX_DOCUMENT + b'"}', {}, "too_large"),
        ("json", b"{not json " + LEAK.encode(), {}, "malformed_json"),
        ("other", {"client_id": f"https://evil.example/{LEAK}"}, {}, "client_id_mismatch"),
        ("secret", "SELF", {"client_secret": LEAK}, "has_secret"),
        (
            "uris",
            "SELF",
            {"redirect_uris": [f"http://evil.example/{LEAK}"]},
            "invalid_redirect_uri",
        ),
        ("logo", "SELF", {"logo_uri": f"javascript:{LEAK}"}, "bad_logo_uri"),
    ],
)
async def test_a_bad_document_is_refused_without_echoing_it(
    http: httpx.AsyncClient,
    server: o.DocumentServer,
    name: str,
    document: Any,
    headers: dict[str, str],
    reason: str,
) -> None:
    path = f"/bad/{name}.json"
    url = server.url(path)
    server.publish(path, doc(url, **headers) if document == "SELF" else document)
    with pytest.raises(DocumentError) as refused:
        await fetcher(server).fetch(url)
    assert refused.value.reason == reason
    assert LEAK not in refused.value.message
    page = await http.get("/authorize", params=o.authorize_params(url, o.pkce()))
    assert page.status_code == 400
    assert "Application metadata unavailable" in page.text
    assert LEAK not in page.text


async def test_redirects_are_followed_on_the_same_host_only(
    server: o.DocumentServer, prefix: str
) -> None:
    here = server.url(f"/{prefix}/here/client.json")
    server.publish(f"/{prefix}/moved/client.json", doc(here))  # it still names its client id
    server.answers[f"/{prefix}/here/client.json"] = o.Answer(
        b"", 302, {"Location": f"/{prefix}/moved/client.json"}
    )
    found = await fetcher(server).fetch(here)
    assert found.client_id == here
    away = server.url(f"/{prefix}/away/client.json")
    target = server.url(f"/{prefix}/moved/client.json", host="localhost")
    server.answers[f"/{prefix}/away/client.json"] = o.Answer(b"", 302, {"Location": target})
    with pytest.raises(DocumentError) as refused:
        await fetcher(server, "127.0.0.1", "localhost").fetch(away)
    assert refused.value.reason == "cross_host_redirect"
    assert server.hits.get(f"/{prefix}/moved/client.json", 0) == 1


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",  # loopback
        "::1",
        "10.1.2.3",  # private
        "172.16.0.1",
        "192.168.1.1",
        "fd00::1",
        "100.64.0.1",  # shared address space
        "169.254.169.254",  # link-local (cloud metadata)
        "fe80::1",
        "224.0.0.1",  # multicast
        "ff02::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",  # v4-mapped loopback
        "240.0.0.1",  # reserved
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b:1::5db8:d70e",  # local-use NAT64, whatever it embeds
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "::ffff:0:7f00:1",  # IPv4-translated 127.0.0.1
        "::ffff:0:ac10:1",  # IPv4-translated 172.16.0.1
        "fec0::1",  # site-local
        "fec0:1::5db8:d70e",
    ],
)
async def test_every_non_public_address_is_refused(server: o.DocumentServer, address: str) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14", address]  # one public address does not excuse the other

    refusing = Fetcher((), ca_file=server.ca_file, resolver=resolver)
    with pytest.raises(DocumentError) as refused:
        await refusing.fetch("https://client.example/metadata.json")
    assert refused.value.reason == "blocked_address"


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("64:ff9b::5db8:d70e", True),  # NAT64 of 93.184.215.14
        ("64:ff9b::7f00:1", False),
        ("2002:5db8:d70e::1", True),  # 6to4 of 93.184.215.14
        ("2002:a00:1::1", False),
        ("::5db8:d70e", True),  # IPv4-compatible
        ("::7f00:1", False),
        ("::ffff:0:5db8:d70e", True),  # IPv4-translated
        ("::ffff:0:a9fe:a9fe", False),
        ("::ffff:93.184.215.14", True),  # IPv4-mapped
        ("::ffff:10.0.0.1", False),
        ("64:ff9b:1::5db8:d70e", False),  # local-use NAT64: refused whatever it embeds
        ("fec0::5db8:d70e", False),  # site-local: refused
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),  # plain global IPv6
    ],
)
async def test_an_embedded_ipv4_address_is_judged_as_itself(address: str, allowed: bool) -> None:
    assert documents.public(address) is allowed


async def test_the_local_server_is_refused_unless_its_host_is_named(
    server: o.DocumentServer, prefix: str
) -> None:
    url = server.publish(f"/{prefix}/local/client.json", b"")
    server.publish(f"/{prefix}/local/client.json", doc(url))
    for host in ("127.0.0.1", "localhost"):
        with pytest.raises(DocumentError) as refused:
            await Fetcher((), ca_file=server.ca_file).fetch(
                server.url(f"/{prefix}/local/client.json", host)
            )
        assert refused.value.reason == "blocked_address"
    assert f"/{prefix}/local/client.json" not in server.hits
    assert (await fetcher(server).fetch(url)).meta.client_name == "Doc Client"


@pytest.mark.parametrize(
    "url",
    [
        "http://client.example/metadata.json",
        "https://client.example",
        "https://client.example/",
        "https://user@client.example/metadata.json",
        "https://client.example/a/../metadata.json",
        "https://client.example/metadata.json#x",
        "https://client.example/" + "x" * 300,
    ],
)
async def test_a_client_url_that_is_not_https_with_a_path_is_refused(url: str) -> None:
    with pytest.raises(DocumentError) as refused:
        await Fetcher(()).fetch(url)
    assert refused.value.reason == "bad_client_url"


async def test_a_certificate_from_an_untrusted_ca_is_refused(server: o.DocumentServer) -> None:
    url = server.publish("/untrusted/client.json", b"")
    server.publish("/untrusted/client.json", doc(url))
    with pytest.raises(DocumentError) as refused:
        await Fetcher(("127.0.0.1",)).fetch(url)
    assert refused.value.reason == "unreachable"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("", documents.DEFAULT_CACHE),
        ("max-age=60", 60),
        ("public, max-age=999999999", documents.MAX_CACHE),
        ("no-store", 0),
        ("no-cache, max-age=600", 0),
    ],
)
async def test_cache_control_is_kept_within_bounds(header: str, seconds: int) -> None:
    assert documents.max_age(header) == seconds


async def test_a_url_client_never_fetched_is_unknown_at_the_token_endpoint(
    http: httpx.AsyncClient,
) -> None:
    response = await o.exchange(http, "https://client.example/x.json", "code", o.pkce())
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


async def test_a_body_without_a_declared_length_is_cut_off_at_the_cap(
    server: o.DocumentServer, prefix: str
) -> None:
    path = f"/{prefix}/endless.json"
    server.answers[path] = o.Answer(b"[" + b"0," * documents.MAX_DOCUMENT + b"0]", undeclared=True)
    with pytest.raises(DocumentError) as refused:
        await fetcher(server).fetch(server.url(path))
    assert refused.value.reason == "too_large"


async def test_a_server_that_stalls_is_given_up_on(server: o.DocumentServer, prefix: str) -> None:
    path, hold = f"/{prefix}/stalled.json", threading.Event()
    server.answers[path] = o.Answer(b"{}", hold=hold)
    try:
        with pytest.raises(DocumentError) as refused:
            await Fetcher(("127.0.0.1",), ca_file=server.ca_file, timeout=0.5).fetch(
                server.url(path)
            )
    finally:
        hold.set()
    assert refused.value.reason == "timeout"


async def test_at_most_four_fetches_run_at_once(server: o.DocumentServer, prefix: str) -> None:
    path, hold = f"/{prefix}/slow.json", threading.Event()
    url = server.url(path)
    server.answers[path] = o.Answer(json.dumps(doc(url)).encode(), hold=hold)
    shared = fetcher(server)
    first = [asyncio.create_task(shared.fetch(url)) for _ in range(documents.MAX_FETCHES)]
    try:
        async with asyncio.timeout(30):
            while server.hits.get(path, 0) < documents.MAX_FETCHES:
                await asyncio.sleep(0.01)
        late = asyncio.create_task(shared.fetch(url))
        for _ in range(20):
            await asyncio.sleep(0)
        assert shared.slots.locked()
        assert not late.done()
        assert server.hits[path] == documents.MAX_FETCHES  # the fifth waits for a slot
    finally:
        hold.set()
    found = await asyncio.gather(*first, late)
    assert {document.client_id for document in found} == {url}
    assert server.hits[path] == documents.MAX_FETCHES + 1
