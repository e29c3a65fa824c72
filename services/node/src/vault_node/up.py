"""`secondbrain up`: a center and one node on loopback, with a demo vault and a ready token.

The signing secret, the operator's admin token, the owner's and the node's credentials are
made once and kept in 0600 files under `<data-dir>/center`; they reach the children through
the environment only. The node is registered with the center and sends it heartbeats, so
the center's vault directory names the node's MCP URL. The one secret ever printed is the
bearer token the client needs.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import yaml

from tickets import SigningKey
from vault_core import layouts
from vault_node.lock import UP_LOCK, DataDirBusyError, exclusive

LOOPBACK = "127.0.0.1"
OWNER = "owner"
NODE_ID = "local"
TOKEN_MINUTES = 90 * 24 * 60  # the longest agent token the center signs
RENEW_BEFORE = 7 * 24 * 3600.0
"""A kept owner token with less than this left is replaced (and revoked) at the next run."""
START_DEADLINE = 60.0
STOP_TIMEOUT = 10.0
DEMO_NOTES = Path(__file__).resolve().parents[4] / "bench" / "demo"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
"""Pinned: unpinned, npx on Node 20 falls back to 0.15.0, whose --cli refuses arguments for a
URL server. This one runs on Node 20 (it is what tests/e2e/inspector installs and drives)."""


class UpError(Exception):
    """Starting failed; the message says what happened and what to do next."""


class Stopped(Exception):  # noqa: N818 — a signal, not a failure
    """SIGINT or SIGTERM arrived: stop the children and exit 0."""


@dataclass(frozen=True)
class UpOptions:
    data_dir: Path
    center_port: int = 2021
    node_port: int = 2020
    as_json: bool = False


@dataclass(frozen=True)
class Place:
    """Where everything lives, as absolute paths and loopback URLs."""

    data_dir: Path
    center_port: int
    node_port: int

    @property
    def center_dir(self) -> Path:
        return self.data_dir / "center"

    @property
    def vaults(self) -> Path:
        return self.data_dir / "vaults"

    @property
    def logs(self) -> Path:
        return self.data_dir / "logs"

    @property
    def center_url(self) -> str:
        return f"http://{LOOPBACK}:{self.center_port}"

    @property
    def node_url(self) -> str:
        return f"http://{LOOPBACK}:{self.node_port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.node_url}/mcp"


def private_file(path: Path, make: Callable[[], str]) -> str:
    """The value kept in `path`, made by `make` and written 0600 if the file is absent."""
    if not path.exists():
        replace_private_file(path, make())
    path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


def center_secrets(place: Place) -> dict[str, str]:
    """The center's environment: its secrets (made once) and where it listens and keeps data."""
    place.center_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    prefix = "SECONDBRAIN_CENTER_"
    return {
        f"{prefix}SECRET": private_file(
            place.center_dir / "signing.secret", lambda: SigningKey.generate().export_secret()
        ),
        f"{prefix}ADMIN_TOKEN": private_file(
            place.center_dir / "admin.token", lambda: secrets.token_urlsafe(32)
        ),
        f"{prefix}DATA_DIR": str(place.center_dir),
        f"{prefix}ISSUER": place.center_url,
        f"{prefix}HOST": LOOPBACK,
        f"{prefix}PORT": str(place.center_port),
    }


def prepare_vaults(vaults: Path) -> list[str]:
    """Create `default` and `demo` (from bench/demo) once; later runs leave them alone."""
    vaults.mkdir(parents=True, exist_ok=True)
    if not (vaults / "default").exists():
        layouts.create(vaults, "default", "wiki-raw")
    if not (vaults / "demo").exists() and DEMO_NOTES.is_dir():
        root = layouts.create(vaults, "demo", "wiki-raw").root
        for note in sorted(DEMO_NOTES.rglob("*.md")):
            target = root / note.relative_to(DEMO_NOTES)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(note, target)
    return sorted(p.name for p in vaults.iterdir() if p.is_dir() and not p.name.startswith("."))


def write_node_config(place: Place) -> Path:
    """The node's settings as a file (no secrets in it), rewritten at every start."""
    settings = {
        "public_url": place.node_url,
        "listen": f"{LOOPBACK}:{place.node_port}",
        "data_dir": str(place.vaults),
        "center_url": place.center_url,
        "node_id": NODE_ID,  # its credential comes through the environment
    }
    if (place.vaults / "demo").is_dir():
        # A first question ("what is in here?") should find the demo notes without naming a vault.
        settings["default_vault"] = "demo"
    path = place.data_dir / "node.yaml"
    header = "# Written by `secondbrain up` at every start: change its options instead.\n"
    path.write_text(header + yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    return path


def check_ports(place: Place) -> None:
    if place.center_port == place.node_port:
        raise UpError("--center-port and --node-port must differ")
    for port, what, option in (
        (place.center_port, "center", "--center-port"),
        (place.node_port, "node", "--node-port"),
    ):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, port))
            except OSError:
                raise UpError(
                    f"port {port} on {LOOPBACK} is taken, so the {what} cannot start; "
                    f"stop what uses it or pass {option} with a free port"
                ) from None


def _die_with_parent() -> None:
    """Linux: the kernel sends SIGTERM to the child when `up` dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Children:
    """The center and the node as subprocesses, in their own sessions so that a terminal's
    Ctrl-C reaches only `up`, which then stops them in order."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, module: str, args: list[str], env: dict[str, str]) -> None:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{name}.log").open("ab") as log:
            self.running[name] = subprocess.Popen(  # noqa: S603 — our own interpreter and module
                [sys.executable, "-c", f"from {module} import main; main()", *args],
                env={**inherited, **env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
            )

    def exited(self) -> str | None:
        """A line about the first child that has stopped, or None while all run."""
        for name, process in self.running.items():
            if process.poll() is not None:
                log = self.logs / f"{name}.log"
                return f"the {name} stopped with exit code {process.returncode}; see {log}"
        return None

    def stop(self) -> None:
        """Terminate every child, wait, and kill those still running after STOP_TIMEOUT."""
        for process in self.running.values():
            if process.poll() is None:
                process.terminate()
        for process in self.running.values():
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_ready(
    children: Children,
    url: str,
    ready: Callable[[dict[str, Any]], bool],
    bearer: str | None = None,
) -> None:
    """Poll `url` until it answers 200 and `ready`; fail early if a child exits."""
    deadline = time.monotonic() + START_DEADLINE
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    while time.monotonic() < deadline:
        if problem := children.exited():
            raise UpError(problem)
        try:
            answer = httpx.get(url, timeout=2.0, headers=headers)
            if answer.status_code == 200 and ready(answer.json()):
                return
        except (httpx.HTTPError, ValueError):
            pass  # not listening yet
        time.sleep(0.2)
    raise UpError(f"{url} did not answer within {START_DEADLINE:.0f} s; see {children.logs}")


def call(method: str, url: str, bearer: str, body: dict[str, Any] | None = None) -> httpx.Response:
    try:
        return httpx.request(
            method, url, json=body, headers={"Authorization": f"Bearer {bearer}"}, timeout=30.0
        )
    except httpx.HTTPError as exc:
        raise UpError(f"the center did not answer {method} {url}: {exc}") from None


def expect(answer: httpx.Response, status: int, what: str) -> dict[str, Any]:
    if answer.status_code != status:
        try:
            message = answer.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {answer.status_code}"
        raise UpError(f"the center refused to {what}: {message}")
    body: dict[str, Any] = answer.json()
    return body


def owner_credential(place: Place, admin_token: str) -> str:
    """The owner's durable credential: reused while the center accepts it, else (re)issued."""
    path = place.center_dir / "owner.credential"
    if path.exists():
        kept = path.read_text(encoding="utf-8").strip()
        if call("GET", f"{place.center_url}/v1/session", kept).status_code == 200:
            return kept
        path.unlink()
    member = {"id": OWNER, "vaults": ["*"], "role": "owner", "scope": "allow_all"}
    answer = call("POST", f"{place.center_url}/v1/members", admin_token, member)
    if answer.status_code == 409:  # the member exists but its credential file was lost
        patch = {"rotate_credential": True}
        answer = call("PATCH", f"{place.center_url}/v1/members/{OWNER}", admin_token, patch)
        created = expect(answer, 200, "rotate the owner's credential")
    else:
        created = expect(answer, 201, "create the owner member")
    return private_file(path, lambda: str(created["credential"]))


def owner_password(place: Place, admin_token: str) -> Path:
    """Where the owner's sign-in password is kept (0600): what an OAuth client's login page
    asks for. Set at the center whenever the file is new; never printed."""
    path = place.center_dir / "owner.password"
    if not path.exists():
        password = secrets.token_urlsafe(18)
        answer = call(
            "PATCH", f"{place.center_url}/v1/members/{OWNER}", admin_token, {"password": password}
        )
        expect(answer, 200, "set the owner's sign-in password")
        private_file(path, lambda: password)
    return path


def node_credential(place: Place, admin_token: str, vaults: list[str]) -> str:
    """The node's credential: reused while the center knows it for this node's URL, else
    the node is registered (again) and the new credential kept."""
    path = place.center_dir / "node.credential"
    listed = expect(call("GET", f"{place.center_url}/v1/nodes", admin_token), 200, "list nodes")
    registered = next((n for n in listed["nodes"] if n["id"] == NODE_ID), None)
    if path.exists() and registered and registered["resource"] == place.mcp_url:
        kept = path.read_text(encoding="utf-8").strip()
        beat = call("POST", f"{place.center_url}/v1/nodes/heartbeat", kept, {"vaults": vaults})
        if beat.status_code == 200 and beat.json().get("node") == NODE_ID:
            return kept
    path.unlink(missing_ok=True)
    if registered:  # its credential file was lost, or it served another port
        gone = call("DELETE", f"{place.center_url}/v1/nodes/{NODE_ID}", admin_token)
        expect(gone, 200, "remove the node's stale registration")
    body = {"id": NODE_ID, "resource": place.mcp_url}
    created = expect(
        call("POST", f"{place.center_url}/v1/nodes", admin_token, body), 201, "register the node"
    )
    return private_file(path, lambda: str(created["credential"]))


def node_token(place: Place, credential: str) -> dict[str, Any]:
    """The owner's agent token for this node: the one kept in `owner.token` while the center
    lists it unrevoked, the owner's generation is the one it was minted in and it has more
    than RENEW_BEFORE left, else a fresh one (the kept one is then revoked): runs do not
    pile up live 90-day tokens."""
    path = place.center_dir / "owner.token"
    kept = _kept_token(path)
    listed = expect(call("GET", f"{place.center_url}/v1/tokens", credential), 200, "list tokens")
    live = {row["jti"]: row for row in listed["tokens"] if row["revoked"] is None}
    held = live.get(kept["jti"]) if kept else None
    left = held["expires_at"] - time.time() if held else 0.0
    session = expect(call("GET", f"{place.center_url}/v1/session", credential), 200, "sign in")
    # A new generation (a rotated credential) killed the owner's tokens without listing them.
    same = {"resource": place.mcp_url, "generation": session["generation"]}
    if kept and left > RENEW_BEFORE and same.items() <= kept.items():
        return kept
    body = {"resource": [place.mcp_url], "minutes": TOKEN_MINUTES}
    minted = expect(
        call("POST", f"{place.center_url}/v1/tokens", credential, body), 201, "sign a token"
    )
    fresh = {key: minted[key] for key in ("token", "jti", "expires_at")}
    replace_private_file(path, json.dumps({**fresh, **same}))
    if kept and held:
        gone = call("DELETE", f"{place.center_url}/v1/tokens/{kept['jti']}", credential)
        expect(gone, 200, "revoke the owner's previous token")
    return fresh


def _kept_token(path: Path) -> dict[str, Any] | None:
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    wanted = {"token", "jti", "expires_at", "resource"}
    return kept if isinstance(kept, dict) and wanted <= kept.keys() else None


def replace_private_file(path: Path, text: str) -> None:
    """Write `text` to `path` (0600) whole or not at all."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text + "\n")
    temporary.replace(path)


def client_configs(url: str, token: str) -> dict[str, Any]:
    """Copy-paste configuration for the MCP clients people use most."""
    header = f"Authorization: Bearer {token}"
    return {
        "claude_code": f'claude mcp add --transport http secondbrain {url} --header "{header}"',
        "claude_desktop": {
            "mcpServers": {
                "secondbrain": {
                    "command": "npx",
                    "args": ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
                    "env": {"AUTH_HEADER": f"Bearer {token}"},
                }
            }
        },
        "cursor": {
            "mcpServers": {
                "secondbrain": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
            }
        },
        "mcp_inspector": (
            f"npx -y {INSPECTOR} --cli {url} --transport http "
            f'--header "{header}" --method tools/list'
        ),
    }


def center_cli(place: Place) -> list[str]:
    """The two lines that point `secondbrain-center` at this center, as its operator."""
    token_file = shlex.quote(str(place.center_dir / "admin.token"))
    return [
        f"export SECONDBRAIN_CENTER_URL={place.center_url}",
        f'export SECONDBRAIN_CENTER_ADMIN_TOKEN="$(cat {token_file})"',
    ]


def summary(
    place: Place, children: Children, vaults: list[str], minted: dict[str, Any]
) -> dict[str, Any]:
    return {
        "mcp_url": place.mcp_url,
        "token": minted["token"],
        "token_id": minted["jti"],
        "token_expires_at": minted["expires_at"],
        "token_expires_at_iso": _iso(minted["expires_at"]),
        "member": OWNER,
        "center_url": place.center_url,
        "console_url": f"{place.center_url}/console",
        "node_url": place.node_url,
        "vaults": vaults,
        "data_dir": str(place.data_dir),
        "logs": str(place.logs),
        "pids": {name: process.pid for name, process in children.running.items()},
        "admin_token_file": str(place.center_dir / "admin.token"),
        "center_cli": center_cli(place),
        "clients": client_configs(place.mcp_url, minted["token"]),
    }


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def render(info: dict[str, Any]) -> str:
    """The text `up` prints: where things run, the URL and token, the client snippets."""
    clients, pids = info["clients"], info["pids"]
    return "\n".join(
        [
            "secondbrain is up.",
            f"  center  {info['center_url']}  pid {pids['center']}",
            f"  node    {info['node_url']}  pid {pids['node']}",
            f"  vaults  {', '.join(info['vaults'])} in {info['data_dir']}/vaults",
            f"  logs    {info['logs']}",
            "",
            f"MCP URL:      {info['mcp_url']}",
            f"Bearer token: {info['token']}",
            f"              (member {info['member']}, all vaults,"
            f" expires {info['token_expires_at_iso']}; kept and reused by the next run)",
            f"Token id:     {info['token_id']}"
            f"  (to end it: secondbrain-center token revoke {info['token_id']})",
            f"OAuth sign-in: member {info['member']}, password in {info['password_file']}",
            "              (for clients that add the MCP URL alone and open a login page)",
            f"Console:      {info['console_url']}",
            f"              (in a browser; sign in as {info['member']} with that password)",
            "",
            "Claude Code:",
            f"  {clients['claude_code']}",
            "",
            "Claude Desktop (claude_desktop_config.json):",
            json.dumps(clients["claude_desktop"], indent=2),
            "",
            "Cursor (.cursor/mcp.json):",
            json.dumps(clients["cursor"], indent=2),
            "",
            "MCP Inspector (Node 20 or later):",
            f"  {clients['mcp_inspector']}",
            "",
            "The center's CLI (secondbrain-center), as its operator:",
            *(f"  {line}" for line in info["center_cli"]),
            "",
            "Ctrl-C stops both.",
        ]
    )


def _stop_on_signal(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


def start_services(place: Place, children: Children) -> dict[str, Any]:
    """Start the center, make the owner and its token, start the node; what `up` prints."""
    env = center_secrets(place)
    vaults = prepare_vaults(place.vaults)
    config = write_node_config(place)
    children.start("center", "center.cli", ["serve"], env)
    wait_ready(children, f"{place.center_url}/healthz", lambda body: body.get("status") == "ok")
    admin = env["SECONDBRAIN_CENTER_ADMIN_TOKEN"]
    # Registered first: the center signs tokens only for a resource a registered node has.
    secret = {"SECONDBRAIN_NODE_CREDENTIAL": node_credential(place, admin, vaults)}
    minted = node_token(place, owner_credential(place, admin))
    password_file = owner_password(place, admin)
    children.start("node", "vault_node.cli", ["serve", "--config", str(config)], secret)
    # The node refuses every token until it holds a revocation snapshot.
    wait_ready(
        children,
        f"{place.node_url}/healthz",
        lambda body: body.get("revocation_age_seconds") is not None,
    )
    # Its first heartbeat tells the center which vaults it serves, at which URL.
    wait_ready(
        children,
        f"{place.center_url}/v1/vaults",
        lambda body: (
            {v["name"] for v in body["vaults"] if v["mcp_url"] == place.mcp_url} >= set(vaults)
        ),
        bearer=admin,
    )
    return {**summary(place, children, vaults, minted), "password_file": str(password_file)}


def run(options: UpOptions) -> int:
    """Start everything, print how to connect, and run until a signal or a child's exit."""
    place = Place(options.data_dir.resolve(), options.center_port, options.node_port)
    try:
        with exclusive(place.data_dir, UP_LOCK, "secondbrain up"):
            return _run_locked(place, options)
    except DataDirBusyError as exc:
        raise UpError(
            f"{exc}; stop it first (Ctrl-C where it runs), or pass --data-dir with another folder"
        ) from None


def _run_locked(place: Place, options: UpOptions) -> int:
    # Holding the data directory: nothing in it (node.yaml, the secrets) is rewritten before.
    check_ports(place)
    children = Children(place.logs)
    previous = {sig: signal.signal(sig, _stop_on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        info = start_services(place, children)
        print(json.dumps(info) if options.as_json else render(info), flush=True)
        while (problem := children.exited()) is None:
            time.sleep(0.5)
        raise UpError(problem)
    except Stopped:
        return 0
    finally:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        children.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
