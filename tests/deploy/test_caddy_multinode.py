"""The compose topology built from processes on loopback: Caddy (Debian's package) terminates
TLS with its internal CA and routes by host name — center.localhost, node-a.localhost,
node-b.localhost — to a center and two nodes, each node holding different vaults and
reporting them in its heartbeat.

It proves that the official MCP SDK client reaches each vault through the proxy by host
name, that the protected-resource metadata names the proxied URLs, that `GET /v1/vaults`
points each vault to its node, that a revocation reaches both nodes, and that a client
signs in (OAuth 2.1) through the proxy alone.

Host names: `*.localhost` does not resolve on every machine (it does not here), so the
test process maps exactly those names to 127.0.0.1 in `socket.getaddrinfo`; TLS still
checks each certificate against its host name.
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from vault_node.testing import free_port, stop

from .conftest import (
    CenterSetup,
    Service,
    call,
    clean_env,
    mcp_session,
    start_node,
    wait_for_snapshot,
    write_node_config,
)

pytestmark = pytest.mark.slow

READY_DEADLINE = 60.0
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
NODE_VAULTS = {"node-a": ("team", "ops"), "node-b": ("personal",)}
UPSTREAM = "127.0.0.1"


@dataclass
class Deployment:
    """The running topology: public URLs behind Caddy, the CA that signed them, the center."""

    port: int
    tls: ssl.SSLContext
    center: CenterSetup
    node_ports: dict[str, int]

    def public(self, host: str) -> str:
        return f"https://{host}.localhost:{self.port}"

    def mcp(self, node: str) -> str:
        return f"{self.public(node)}/mcp"

    def http(self, **headers: str) -> httpx.Client:
        return httpx.Client(verify=self.tls, timeout=30, headers=headers)

    def operator(self) -> httpx.Client:
        return self.http(Authorization=f"Bearer {self.center.admin_token}")


def caddyfile(root: Path, port: int, upstreams: dict[str, int | tuple[int, ...]]) -> Path:
    """An `admin off` Caddyfile: one TLS site per host name, certificates from Caddy's
    internal CA kept under `root`, nothing bound beyond loopback, no trust store touched.
    A host with several upstreams sends each request to one of them at random."""
    sites = "".join(
        f"https://{host}.localhost:{port} {{\n\tbind {UPSTREAM}\n\t{_proxy(upstream)}\n}}\n"
        for host, upstream in upstreams.items()
    )
    path = root / "Caddyfile"
    path.write_text(
        "{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n"
        f"\tlocal_certs\n\thttp_port {free_port()}\n\thttps_port {port}\n"
        f"\tstorage file_system {root / 'storage'}\n}}\n{sites}"
    )
    return path


def _proxy(upstream: int | tuple[int, ...]) -> str:
    if isinstance(upstream, int):
        return f"reverse_proxy {UPSTREAM}:{upstream}"
    # As deploy/caddy/Caddyfile: a request that cannot reach one upstream is tried on
    # another (a POST only if it never reached the first); no passive health check.
    targets = " ".join(f"{UPSTREAM}:{port}" for port in upstream)
    options = ("lb_policy random", "lb_try_duration 10s", "lb_try_interval 250ms")
    return f"reverse_proxy {targets} {{\n" + "".join(f"\t\t{o}\n" for o in options) + "\t}"


@contextlib.contextmanager
def caddy(
    root: Path, port: int, upstreams: dict[str, int | tuple[int, ...]]
) -> Iterator[ssl.SSLContext]:
    """`caddy run` as a subprocess until its sites answer; yields a context trusting its CA."""
    config = caddyfile(root, port, upstreams)
    log = root / "caddy.log"
    env = clean_env(HOME=str(root), XDG_DATA_HOME=str(root / "xdg"), XDG_CONFIG_HOME=str(root))
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["caddy", "run", "--config", str(config), "--adapter", "caddyfile"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield wait_for_caddy(root, port, process, log)
    finally:
        stop(process)


def wait_for_caddy(
    root: Path, port: int, process: subprocess.Popen[bytes], log: Path
) -> ssl.SSLContext:
    root_cert = root / "storage" / "pki" / "authorities" / "local" / "root.crt"
    deadline = time.monotonic() + READY_DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"caddy exited with {process.returncode}:\n{log.read_text()}")
        if root_cert.exists():
            tls = ssl.create_default_context(cafile=str(root_cert))
            try:
                health = httpx.get(f"https://center.localhost:{port}/healthz", verify=tls)
                if health.status_code == 200:
                    return tls
            except httpx.TransportError:
                pass
        time.sleep(0.1)
    pytest.fail(f"caddy was not ready within {READY_DEADLINE} s:\n{log.read_text()}")


def start_nodes(root: Path, center: CenterSetup, port: int) -> tuple[dict[str, int], list[Service]]:
    """Register each node with the center, give it its vaults, start it with heartbeats."""
    ports, started = {}, []
    for node, vaults in NODE_VAULTS.items():
        public = f"https://{node}.localhost:{port}"
        registered = center.admin("POST", "/v1/nodes", {"id": node, "resource": f"{public}/mcp"})
        data = root / node / "vaults"
        for vault in vaults:
            (data / vault).mkdir(parents=True)
        ports[node] = free_port()
        config = write_node_config(
            root / node / "node.yaml",
            public_url=public,
            listen=f"{UPSTREAM}:{ports[node]}",
            data_dir=data,
            default_vault=vaults[0],
            center_url=center.url,  # keys, revocations and heartbeats go straight to the center
            issuer=center.issuer,
            node_id=node,
            node_credential="env:NODE_CREDENTIAL",  # the file holds no secret
            heartbeat_interval="1s",
            revocation_poll="1s",
            watch="false",
        )
        base = f"http://{UPSTREAM}:{ports[node]}"
        env = clean_env(NODE_CREDENTIAL=registered["credential"])
        started.append(start_node(config, base, root / node / "node.log", env))
        wait_for_snapshot(base)
    return ports, started


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, localhost_names: None
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("caddy")
    port = free_port()
    center = CenterSetup(root / "center", issuer=f"https://center.localhost:{port}")
    services = [center.start(root / "center.log")]
    try:
        ports, nodes = start_nodes(root, center, port)
        services += nodes
        with caddy(root, port, {"center": center.port, **ports}) as tls:
            yield Deployment(port, tls, center, ports)
    finally:
        for service in services:
            service.stop()


def vault_directory(deployment: Deployment) -> dict[str, Any]:
    """`GET /v1/vaults` through the proxy once every node's heartbeat has reported."""
    deadline = time.monotonic() + READY_DEADLINE
    with deployment.operator() as http:
        while True:
            listed = http.get(f"{deployment.public('center')}/v1/vaults")
            assert listed.status_code == 200, listed.text
            vaults = {entry["name"]: entry for entry in listed.json()["vaults"]}
            if all(vaults.get(v, {}).get("reported") for vs in NODE_VAULTS.values() for v in vs):
                return vaults
            if time.monotonic() > deadline:
                pytest.fail(f"the heartbeats never reported every vault: {vaults}")
            time.sleep(0.2)


def member_token(deployment: Deployment, member: str, vaults: list[str]) -> dict[str, Any]:
    """A member of `vaults` and an agent token for it, both made through the proxy."""
    center = deployment.public("center")
    with deployment.operator() as http:
        body = {"id": member, "vaults": vaults, "role": "editor", "scope": "read_write"}
        made = http.post(f"{center}/v1/members", json=body)
        assert made.status_code == 201, made.text
    with deployment.http(Authorization=f"Bearer {made.json()['credential']}") as http:
        minted = http.post(f"{center}/v1/tokens", json={"minutes": 30})
        assert minted.status_code == 201, minted.text
    token: dict[str, Any] = minted.json()
    return token


def test_the_vault_directory_points_each_vault_to_its_node(deployment: Deployment) -> None:
    vaults = vault_directory(deployment)
    for node, names in NODE_VAULTS.items():
        for name in names:
            assert vaults[name]["node"] == node
            assert vaults[name]["mcp_url"] == deployment.mcp(node)


@pytest.mark.parametrize("node", sorted(NODE_VAULTS))
def test_the_resource_metadata_names_the_proxied_urls(deployment: Deployment, node: str) -> None:
    public = deployment.public(node)
    with deployment.http() as http:
        documents = [
            http.get(f"{public}/.well-known/oauth-protected-resource").json(),
            http.get(f"{public}/.well-known/oauth-protected-resource/mcp").json(),
        ]
        refused = http.post(f"{public}/mcp", json=PING)
    for document in documents:
        assert document["resource"] == deployment.mcp(node)
        assert document["authorization_servers"] == [deployment.public("center")]
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{public}/.well-known/oauth-protected-resource"' in challenge


@pytest.mark.asyncio
async def test_the_sdk_client_reaches_each_vault_through_the_proxy(deployment: Deployment) -> None:
    vault_directory(deployment)  # the token's audience comes from the heartbeats
    minted = member_token(deployment, "carol", ["team", "personal"])
    assert sorted(minted["audience"]) == sorted(deployment.mcp(n) for n in NODE_VAULTS)
    async with mcp_session(deployment.mcp("node-a"), minted["token"], deployment.tls) as a:
        seen_a = await call(a, "vault_list", {})
        await call(a, "note_create", {"vault": "team", "path": "proxied", "content": "via A\n"})
        refused = await a.call_tool("note_read", {"vault": "personal", "path": "x"})
    async with mcp_session(deployment.mcp("node-b"), minted["token"], deployment.tls) as b:
        seen_b = await call(b, "vault_list", {})
        await call(b, "note_create", {"path": "proxied", "content": "via B\n"})
        read = await call(b, "note_read", {"path": "proxied"})
    assert [v["name"] for v in seen_a["vaults"]] == ["team"]  # ops: not carol's; personal: on B
    assert [v["name"] for v in seen_b["vaults"]] == ["personal"]
    assert refused.is_error
    assert read["content"].strip() == "via B"


def is_refusal(answer: httpx.Response) -> bool:
    """Whether `answer` is the one 401 a node gives a token it does not take."""
    return (
        answer.status_code == 401
        and answer.json()["error"] == "invalid_token"
        and answer.headers["www-authenticate"].startswith("Bearer resource_metadata=")
    )


def refused_everywhere(deployment: Deployment, token: str) -> bool:
    with deployment.http(Authorization=f"Bearer {token}") as http:
        return all(is_refusal(http.post(deployment.mcp(node), json=PING)) for node in NODE_VAULTS)


def test_a_revocation_reaches_both_nodes(deployment: Deployment) -> None:
    vault_directory(deployment)
    minted = member_token(deployment, "dave", ["team", "personal"])
    with deployment.http(Authorization=f"Bearer {minted['token']}") as http:
        for node in NODE_VAULTS:
            answer = http.post(deployment.mcp(node), json=PING)
            assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}, answer.text
    with deployment.operator() as http:
        revoked = http.delete(f"{deployment.public('center')}/v1/tokens/{minted['jti']}")
        assert revoked.status_code == 200, revoked.text
    deadline = time.monotonic() + READY_DEADLINE
    while not refused_everywhere(deployment, minted["token"]):
        if time.monotonic() > deadline:
            pytest.fail("the revocation did not reach both nodes")
        time.sleep(0.2)


@pytest.mark.asyncio
async def test_sign_in_through_the_proxy(deployment: Deployment) -> None:
    """The OAuth 2.1 flow a client runs, every step through the proxy's public URLs:
    node 401 → protected-resource metadata → the center's RFC 8414 metadata → client
    registration → login page → consent page → code → token (PKCE, `resource` = node A)
    → MCP calls."""
    # Imported here: the OAuth server is its own piece of work; only this test needs it.
    from center.oauth import testing as oauth  # noqa: PLC0415

    vault_directory(deployment)
    with deployment.operator() as http:
        body = {"id": "erin", "vaults": ["team"], "role": "editor", "scope": "read_write"}
        made = http.post(
            f"{deployment.public('center')}/v1/members", json={**body, "password": oauth.PASSWORD}
        )
        assert made.status_code == 201, made.text
    async with httpx.AsyncClient(verify=deployment.tls, timeout=60) as http:
        refused = await http.post(deployment.mcp("node-a"), json=PING)
        metadata_url = refused.headers["www-authenticate"].split('resource_metadata="')[1][:-1]
        resource = (await http.get(metadata_url)).json()
        issuer = resource["authorization_servers"][0]
        server = (await http.get(f"{issuer}/.well-known/oauth-authorization-server")).json()
    assert server["issuer"] == deployment.public("center")
    for endpoint in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        assert server[endpoint].startswith(deployment.public("center"))
    async with httpx.AsyncClient(base_url=issuer, verify=deployment.tls, timeout=60) as center:
        client_id = await oauth.register(center)
        proof = oauth.pkce()
        params = oauth.authorize_params(client_id, proof, resource=(resource["resource"],))
        signed_in = await oauth.sign_in(center, params, "erin", oauth.PASSWORD)
        code = oauth.redirect_params(signed_in)["code"]
        answer = await oauth.exchange(center, client_id, code, proof)
        assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    async with mcp_session(deployment.mcp("node-a"), token, deployment.tls) as session:
        listed = await call(session, "vault_list", {})
    assert [v["name"] for v in listed["vaults"]] == ["team"]
    with deployment.http(Authorization=f"Bearer {token}") as http:
        assert is_refusal(http.post(deployment.mcp("node-b"), json=PING))  # aud: A only
