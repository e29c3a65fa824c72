"""`secondbrain up` as a person runs it: a real subprocess that starts a center and a node on
loopback ports, prints what a client needs, and stops both on a signal."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from center.oauth import testing as o
from vault_node.testing import free_port
from vault_node.up import INSPECTOR

FORM = {"Content-Type": "application/x-www-form-urlencoded"}

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from vault_node.cli import main; main()"]
CENTER_CLI = [sys.executable, "-c", "from center.cli import main; main()"]
DEADLINE = 120.0  # generous: first start runs the center's migrations and indexes two vaults


@dataclass
class Up:
    """A running `secondbrain up` and everything it printed so far."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str]
    pump: threading.Thread
    output: str = ""

    def read_until(self, marker: str) -> str:
        deadline = time.monotonic() + DEADLINE
        while marker not in self.output:
            if time.monotonic() > deadline:
                pytest.fail(f"`up` never printed {marker!r}; printed:\n{self.output}")
            try:
                self.output += self.lines.get(timeout=1.0)
            except queue.Empty:
                if self.process.poll() is not None:
                    pytest.fail(f"`up` exited with {self.process.returncode}:\n{self.output}")
        return self.output

    def stop(self, sig: signal.Signals = signal.SIGINT) -> int:
        self.process.send_signal(sig)
        code = self.process.wait(timeout=DEADLINE)
        self.read_rest()
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.read_rest()
        assert self.process.stdout is not None
        self.process.stdout.close()

    def read_rest(self) -> None:
        """After the exit: everything up to the end of its output."""
        self.pump.join(timeout=DEADLINE)
        while not self.lines.empty():
            self.output += self.lines.get()


def start_up(data_dir: Path, ports: tuple[int, int], *extra: str) -> Up:
    center, node = ports
    args = ["up", "--data-dir", str(data_dir), "--center-port", str(center)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    process = subprocess.Popen(
        [*CLI, *args, "--node-port", str(node), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return Up(process, lines, thread)


@pytest.fixture
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture
def launch() -> Iterator[Callable[..., Up]]:
    """Start `up` processes; whatever still runs at the end is stopped."""
    started: list[Up] = []

    def start(data_dir: Path, ports: tuple[int, int], *extra: str) -> Up:
        started.append(start_up(data_dir, ports, *extra))
        return started[-1]

    yield start
    for up in started:
        up.close()


@pytest.fixture
def running(tmp_path: Path, ports: tuple[int, int], launch: Callable[..., Up]) -> Up:
    """`up` in text mode, read up to the end of what it prints at start."""
    up = launch(tmp_path / "data", ports)
    up.read_until("Ctrl-C stops both.")
    return up


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + DEADLINE
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def mcp(url: str, token: str, method: str, params: dict[str, Any], ident: int) -> dict[str, Any]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    body = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
    answer = httpx.post(url, json=body, headers=headers, timeout=30.0)
    assert answer.status_code == 200, answer.text
    reply: dict[str, Any] = answer.json()
    assert "result" in reply, reply
    return reply


def secrets_of(data_dir: Path) -> list[str]:
    center = data_dir / "center"
    names = (
        "admin.token",
        "signing.secret",
        "owner.credential",
        "node.credential",
        "owner.password",
    )
    return [(center / name).read_text().strip() for name in names]


def test_the_printed_url_and_token_work_for_an_mcp_client(running: Up) -> None:
    url = re.search(r"MCP URL:\s+(\S+)", running.output)
    token = re.search(r"Bearer token:\s+(\S+)", running.output)
    assert url
    assert token
    init = mcp(url[1], token[1], "initialize", {"protocolVersion": "2025-06-18"}, 1)
    assert init["result"]["protocolVersion"] == "2025-06-18"
    tools = mcp(url[1], token[1], "tools/list", {}, 2)["result"]["tools"]
    assert "note_search" in {tool["name"] for tool in tools}
    found = mcp(
        url[1],
        token[1],
        "tools/call",
        {"name": "note_search", "arguments": {"query": "retro"}},
        3,
    )["result"]
    assert not found["isError"], found
    paths = {hit["path"] for hit in found["structuredContent"]["hits"]}
    assert "raw/2026-03-02-retro.md" in paths


def test_the_printed_sign_in_works_for_an_oauth_client(running: Up) -> None:
    """What an MCP client that adds the URL alone does: discover the center from the node,
    register, sign in on the login page as the printed member and allow the client on the
    consent page, get a token, call a tool."""
    url = re.search(r"MCP URL:\s+(\S+)", running.output)
    sign_in = re.search(r"OAuth sign-in: member (\S+), password in (\S+)", running.output)
    assert url
    assert sign_in
    password = Path(sign_in[2]).read_text().strip()
    assert Path(sign_in[2]).stat().st_mode & 0o777 == 0o600
    with httpx.Client(timeout=30.0) as http:
        refused = http.post(url[1], json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        metadata = http.get(refused.headers["www-authenticate"].split('"')[1]).json()
        center = metadata["authorization_servers"][0]
        client = http.post(f"{center}/register", json={"redirect_uris": [o.REDIRECT]})
        assert client.status_code == 201, client.text
        client_id, proof = client.json()["client_id"], o.pkce()
        params = o.authorize_params(client_id, proof, resource=[url[1]])
        form = o.login_form(http.get(f"{center}/authorize", params=params))
        posted = http.post(
            form.action,
            data={"username": sign_in[1], "password": password, "csrf": form.csrf},
        )
        asked = o.consent_form(posted)  # the consent page: allow what it offers
        assert asked is not None, posted.text
        allowed = http.post(asked.action, content=urlencode(asked.fields()), headers=FORM)
        code = o.redirect_params(allowed)["code"]
        body = {
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": proof.verifier,
            "resource": url[1],
        }
        tokens = http.post(f"{center}/token", data=body)
        assert tokens.status_code == 200, tokens.text
    access = tokens.json()["access_token"]
    listed = mcp(url[1], access, "tools/call", {"name": "vault_list", "arguments": {}}, 2)
    assert not listed["result"]["isError"], listed
    assert password not in running.output


def test_the_printed_console_address_signs_the_owner_in(running: Up) -> None:
    console = re.search(
        r"Console:\s+(\S+)\n\s+\(in a browser; sign in as (\S+) with", running.output
    )
    sign_in = re.search(r"OAuth sign-in: member (\S+), password in (\S+)", running.output)
    center = re.search(r"center\s+(http://\S+)", running.output)
    assert console
    assert sign_in
    assert center
    assert console[2] == sign_in[1]
    password = Path(sign_in[2]).read_text().strip()
    with httpx.Client(timeout=30.0, follow_redirects=True) as http:
        landed = http.get(center[1])  # the center's bare address leads there too
        assert landed.status_code == 200
        assert str(landed.url) == f"{console[1]}/sign-in"
        csrf = re.search(r'name="csrf" value="([^"]+)"', landed.text)
        assert csrf
        home = http.post(
            f"{console[1]}/sign-in",
            data={"username": console[2], "password": password, "csrf": csrf[1]},
        )
        assert home.status_code == 200
        assert str(home.url).startswith(f"{console[1]}/")
        assert "Sign out" in home.text


def test_the_center_lists_the_vaults_with_the_nodes_mcp_url(running: Up, tmp_path: Path) -> None:
    url = re.search(r"MCP URL:\s+(\S+)", running.output)
    center = re.search(r"center\s+(http://\S+)", running.output)
    assert url
    assert center
    admin = (tmp_path / "data" / "center" / "admin.token").read_text().strip()
    listed = httpx.get(
        f"{center[1]}/v1/vaults", headers={"Authorization": f"Bearer {admin}"}, timeout=30.0
    ).json()["vaults"]
    assert {v["name"]: (v["node"], v["mcp_url"]) for v in listed} == {
        "default": ("local", url[1]),
        "demo": ("local", url[1]),
    }
    credential = tmp_path / "data" / "center" / "node.credential"
    assert credential.stat().st_mode & 0o777 == 0o600
    assert "node_credential" not in (tmp_path / "data" / "node.yaml").read_text()


def test_the_output_has_a_snippet_for_each_client_and_no_other_secret(
    running: Up, tmp_path: Path
) -> None:
    token = re.search(r"Bearer token:\s+(\S+)", running.output)
    assert token
    url = re.search(r"MCP URL:\s+(\S+)", running.output)
    assert url
    header = f'--header "Authorization: Bearer {token[1]}"'
    assert f"claude mcp add --transport http secondbrain {url[1]} {header}" in running.output
    assert f"npx -y {INSPECTOR} --cli {url[1]} --transport http" in running.output
    assert '"mcp-remote"' in running.output  # Claude Desktop
    assert '"url": "' + url[1] in running.output  # Cursor
    for secret in secrets_of(tmp_path / "data"):
        assert secret not in running.output


def test_the_printed_exports_drive_the_center_cli(running: Up, tmp_path: Path) -> None:
    lines = running.output.split("The center's CLI (secondbrain-center), as its operator:\n")[1]
    exports = [line.strip() for line in lines.splitlines()[:2]]
    assert [line.split("=", 1)[0] for line in exports] == [
        "export SECONDBRAIN_CENTER_URL",
        "export SECONDBRAIN_CENTER_ADMIN_TOKEN",
    ]
    assert str(tmp_path / "data" / "center" / "admin.token") in exports[1]
    admin_token = (tmp_path / "data" / "center" / "admin.token").read_text().strip()
    assert admin_token not in running.output
    center = f"{sys.executable} -c 'from center.cli import main; main()'"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    shell = subprocess.run(
        ["/bin/sh", "-c", "\n".join([*exports, f"{center} member list --json"])],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shell.returncode == 0, shell.stderr
    assert [m["id"] for m in json.loads(shell.stdout)["members"]] == ["owner"]


def test_the_inspector_is_pinned_alike_in_up_the_docs_and_the_e2e_install() -> None:
    root = Path(__file__).resolve().parents[3]
    package = json.loads((root / "tests/e2e/inspector/package.json").read_text())
    name, _, version = INSPECTOR.rpartition("@")
    assert package["dependencies"] == {name: version}
    for doc in ("README.md", "docs/quickstart.md", "docs/clients.md"):
        text = (root / doc).read_text()
        assert INSPECTOR in text, doc
        assert "npx @modelcontextprotocol/inspector --cli" not in text, doc


def test_up_help_says_what_its_data_dir_holds() -> None:
    shown = subprocess.run(
        [*CLI, "up", "--help"],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "one folder per vault" not in shown
    assert "the center's secrets and database (center/), the vaults (vaults/)" in shown


def test_sigint_stops_both_children_and_exits_0(running: Up) -> None:
    pids = [int(pid) for pid in re.findall(r"pid (\d+)", running.output)]
    assert len(pids) == 2
    assert running.stop(signal.SIGINT) == 0
    assert wait_gone(pids) == []


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux only")
def test_the_children_stop_even_when_up_is_killed(running: Up) -> None:
    pids = [int(pid) for pid in re.findall(r"pid (\d+)", running.output)]
    running.process.kill()
    running.process.wait()
    assert wait_gone(pids) == []


def test_a_second_run_reuses_the_private_secrets_the_owner_and_the_vaults(
    tmp_path: Path, ports: tuple[int, int], launch: Callable[..., Up]
) -> None:
    data = tmp_path / "data"
    first = launch(data, ports, "--json")
    before = json.loads(first.read_until("\n"))
    kept = secrets_of(data)
    for name in ("admin.token", "signing.secret", "owner.credential"):
        assert (data / "center" / name).stat().st_mode & 0o777 == 0o600
    demo_notes = sorted(p.relative_to(data) for p in (data / "vaults/demo").rglob("*.md"))
    assert first.stop(signal.SIGTERM) == 0
    second = launch(data, ports, "--json")
    after = json.loads(second.read_until("\n"))
    try:
        assert (after["token"], after["token_id"]) == (before["token"], before["token_id"])
        assert secrets_of(data) == kept
        assert after["vaults"] == before["vaults"] == ["default", "demo"]
        assert sorted(p.relative_to(data) for p in (data / "vaults/demo").rglob("*.md")) == (
            demo_notes
        )
        members = httpx.get(
            f"{after['center_url']}/v1/members",
            headers={"Authorization": f"Bearer {kept[0]}"},
            timeout=30.0,
        ).json()["members"]
        assert [member["id"] for member in members] == ["owner"]
        assert all(secret not in first.output + second.output for secret in kept)
    finally:
        assert second.stop(signal.SIGINT) == 0
    assert wait_gone(list(after["pids"].values())) == []


def test_a_token_kept_for_another_address_is_replaced_and_revoked(
    tmp_path: Path, ports: tuple[int, int], launch: Callable[..., Up]
) -> None:
    """`up` on other ports needs a token for the other URL: it mints one and revokes the
    old one instead of leaving a live 90-day token behind at every run."""
    data = tmp_path / "data"
    first = launch(data, ports, "--json")
    before = json.loads(first.read_until("\n"))
    assert first.stop(signal.SIGTERM) == 0
    second = launch(data, (free_port(), free_port()))
    second.read_until("Ctrl-C stops both.")
    token_id = re.search(
        r"Token id:\s+(\S+)\s+\(to end it: secondbrain-center token revoke (\S+)\)", second.output
    )
    assert token_id
    assert token_id[1] == token_id[2] != before["token_id"]
    assert before["token"] not in second.output
    center = re.search(r"center\s+(http://\S+)", second.output)
    assert center
    owner = (data / "center" / "owner.credential").read_text().strip()
    listed = httpx.get(
        f"{center[1]}/v1/tokens", headers={"Authorization": f"Bearer {owner}"}, timeout=30.0
    ).json()["tokens"]
    assert {row["jti"]: row["revoked"] is not None for row in listed} == {
        before["token_id"]: True,
        token_id[1]: False,
    }
    assert (data / "center" / "owner.token").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("taken", ["center", "node"])
def test_a_taken_port_is_one_clear_line(
    tmp_path: Path, taken: str, launch: Callable[..., Up]
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        busy = squatter.getsockname()[1]
        other = free_port()
        ports = (busy, other) if taken == "center" else (other, busy)
        up = launch(tmp_path / "data", ports)
        code = up.process.wait(timeout=DEADLINE)
        up.read_rest()
    assert code == 2
    option = "--center-port" if taken == "center" else "--node-port"
    assert f"port {busy} on 127.0.0.1 is taken" in up.output
    assert option in up.output
    assert len(up.output.strip().splitlines()) == 1


def test_a_second_up_on_one_data_dir_is_one_clear_line_and_rewrites_nothing(
    running: Up, tmp_path: Path, launch: Callable[..., Up]
) -> None:
    data = tmp_path / "data"
    kept = {
        path: (path.read_bytes(), path.stat().st_mtime_ns)
        for path in [data / "node.yaml", *(data / "center").iterdir()]
        # The running center writes its own database and audit log (lease renewals,
        # heartbeats) all along: only what a second `up` could rewrite is compared.
        if path.is_file() and not path.name.startswith(("center.db", "audit"))
    }
    assert kept, "nothing to compare"
    second = launch(data, (free_port(), free_port()))
    code = second.process.wait(timeout=DEADLINE)
    second.read_rest()
    assert code == 2
    assert second.output.splitlines() == [
        f"error: another `secondbrain up` (pid {running.process.pid}) uses this data directory; "
        "stop it first (Ctrl-C where it runs), or pass --data-dir with another folder"
    ]
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in kept} == kept
    assert running.process.poll() is None


def vault_names(url: str, token: str) -> dict[str, bool]:
    """vault_list as the printed token sees it: name → still opening."""
    listed = mcp(url, token, "tools/call", {"name": "vault_list", "arguments": {}}, 9)["result"]
    return {row["name"]: row.get("opening", False) for row in listed["structuredContent"]["vaults"]}


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"never: {what}")
        time.sleep(0.2)


def test_a_vault_folder_added_to_a_running_node_is_served_and_reported(
    running: Up, tmp_path: Path
) -> None:
    """Copied in, or made by `vault create` with its defaults: the node finds the folder at
    its next scan, lists it, and the center places members on it without --unplaced."""
    url = re.search(r"MCP URL:\s+(\S+)", running.output)
    token = re.search(r"Bearer token:\s+(\S+)", running.output)
    center = re.search(r"center\s+(http://\S+)", running.output)
    assert url
    assert token
    assert center
    copied = tmp_path / "data" / "vaults" / "scratch2"
    copied.mkdir()
    (copied / "idea.md").write_text("# Idea\n\nA note copied in by hand.\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    created = subprocess.run(
        [*CLI, "vault", "create", "notes"],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "data" / "vaults" / "notes").is_dir()
    assert str(tmp_path / "data" / "vaults") in created.stdout
    assert not (tmp_path / "data" / "notes").exists()

    wait_for(lambda: {"scratch2", "notes"} <= vault_names(url[1], token[1]).keys(), "vault_list")
    admin = (tmp_path / "data" / "center" / "admin.token").read_text().strip()

    def at_center() -> set[str]:
        answer = httpx.get(
            f"{center[1]}/v1/vaults", headers={"Authorization": f"Bearer {admin}"}, timeout=30.0
        )
        return {v["name"] for v in answer.json()["vaults"] if v["mcp_url"] == url[1]}

    wait_for(lambda: {"scratch2", "notes"} <= at_center(), "the center lists them")
    member = subprocess.run(
        [*CENTER_CLI, "member", "add", "carol", "--vault", "scratch2"],
        env={**clean, "SECONDBRAIN_CENTER_URL": center[1], "SECONDBRAIN_CENTER_ADMIN_TOKEN": admin},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert member.returncode == 0, member.stdout + member.stderr
    wait_for(lambda: not vault_names(url[1], token[1])["scratch2"], "scratch2 opened")
    found = mcp(
        url[1],
        token[1],
        "tools/call",
        {"name": "note_read", "arguments": {"vault": "scratch2", "path": "idea.md"}},
        10,
    )["result"]
    assert not found["isError"], found


def test_a_rotated_owner_credential_needs_no_file_deleted(
    tmp_path: Path, ports: tuple[int, int], launch: Callable[..., Up]
) -> None:
    """What the quickstart says: rotate the owner's credential with the CLI, restart `up`,
    and it keeps a working credential and prints a working token on its own."""
    data = tmp_path / "data"
    first = launch(data, ports, "--json")
    before = json.loads(first.read_until("\n"))
    admin = (data / "center" / "admin.token").read_text().strip()
    old_credential = (data / "center" / "owner.credential").read_text().strip()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    rotated = subprocess.run(
        [*CENTER_CLI, "member", "set", "owner", "--rotate-credential"],
        env={
            **clean,
            "SECONDBRAIN_CENTER_URL": before["center_url"],
            "SECONDBRAIN_CENTER_ADMIN_TOKEN": admin,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    assert first.stop(signal.SIGTERM) == 0
    second = launch(data, ports, "--json")
    after = json.loads(second.read_until("\n"))
    assert after["token_id"] != before["token_id"]
    assert (data / "center" / "owner.credential").read_text().strip() != old_credential
    listed = mcp(after["mcp_url"], after["token"], "tools/call", {"name": "vault_list"}, 2)
    assert not listed["result"]["isError"], listed
    demo = next(v for v in listed["result"]["structuredContent"]["vaults"] if v["name"] == "demo")
    quickstart = (Path(__file__).resolve().parents[3] / "docs" / "quickstart.md").read_text()
    assert demo["notes"] == 13
    assert "counts thirteen notes" in quickstart
