"""deploy/backup: back up a live center and node, wipe them, restore, start again — the audit
chain verifies, notes and their history are back, the search index rebuilds itself, and a
token signed before the backup and the member's credential still work. On SQLite and on
PostgreSQL. Also: a damaged backup or a non-empty target is refused before anything is
written."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from vault_node.testing import free_port

from .conftest import (
    BIN,
    ROOT,
    CenterSetup,
    Service,
    call,
    clean_env,
    mcp_session,
    postgres_database,
    recreate_database,
    start_node,
    wait_for_snapshot,
    write_node_config,
)

pytestmark = pytest.mark.slow

BACKUP = ROOT / "deploy" / "backup" / "backup.sh"
RESTORE = ROOT / "deploy" / "backup" / "restore.sh"


def run_script(script: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args], env=env, capture_output=True, text=True, check=False
    )


class Host:
    """One host of the test: a center and a node `node-a` holding the vault `team`."""

    def __init__(self, root: Path, database_url: str | None) -> None:
        self.root = root
        self.center = CenterSetup(root / "center", database_url=database_url)
        self.vaults = root / "vaults"
        self.node_port = free_port()
        self.services: list[Service] = []

    @property
    def node_base(self) -> str:
        return f"http://127.0.0.1:{self.node_port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.node_base}/mcp"

    def start(self) -> None:
        self.services.append(self.center.start(self.root / "center.log"))
        # Registered (once; a restore brings the registration back): the center signs
        # tokens only for a resource a registered node has.
        if not self.center.admin("GET", "/v1/nodes")["nodes"]:
            self.center.admin("POST", "/v1/nodes", {"id": "node-a", "resource": self.mcp_url})
        config = write_node_config(
            self.root / "node.yaml",
            public_url=self.node_base,
            listen=f"127.0.0.1:{self.node_port}",
            data_dir=self.vaults,
            center_url=self.center.url,
            default_vault="team",
            watch="false",
        )
        self.services.append(start_node(config, self.node_base, self.root / "node.log"))
        wait_for_snapshot(self.node_base)

    def stop(self) -> None:
        while self.services:
            self.services.pop().stop()

    def script_env(self) -> dict[str, str]:
        url = self.center.database_url
        return clean_env(**({"SECONDBRAIN_CENTER_DATABASE_URL": url} if url else {}))


@pytest.fixture(params=["sqlite", "postgresql"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        machine = Host(tmp_path, None)
        yield machine
        machine.stop()
        return
    with postgres_database() as url:
        machine = Host(tmp_path, url)
        yield machine
        machine.stop()


@pytest.mark.asyncio
async def test_a_restored_host_serves_what_was_backed_up(host: Host, tmp_path: Path) -> None:
    (host.vaults / "team").mkdir(parents=True)
    host.start()
    center = host.center
    member = {"id": "alice", "vaults": ["team"], "role": "editor", "scope": "read_write"}
    alice = center.admin("POST", "/v1/members", member)["credential"]
    minted = center.admin(
        "POST", "/v1/tokens", {"resource": [host.mcp_url], "minutes": 120}, token=alice
    )
    async with mcp_session(host.mcp_url, minted["token"]) as session:
        made = await call(session, "note_create", {"path": "plans/q3", "content": "Plan v1\n"})
        await call(
            session,
            "note_edit",
            {"path": "plans/q3", "old_string": "v1", "new_string": "v2 zanzibar"},
        )
    assert made["created"] is True
    audit_seq = httpx.get(f"{center.url}/healthz").json()["audit_seq"]

    done = run_script(
        BACKUP,
        "--center",
        str(center.data_dir),
        "--node",
        f"node-a={host.vaults}",
        str(tmp_path / "backups"),
        env=host.script_env(),
    )
    assert done.returncode == 0, done.stderr
    backup = Path(done.stdout.strip().splitlines()[-1])
    with tarfile.open(backup / "nodes" / "node-a.tar") as archive:
        names = archive.getnames()
    assert any(name.endswith("team/plans/q3.md") for name in names)
    assert any("/.git/" in name for name in names)
    assert not any("index.db" in name for name in names)  # rebuildable, so never copied
    assert (backup.stat().st_mode & 0o777) == 0o700

    # What happens after the backup is lost by the restore.
    async with mcp_session(host.mcp_url, minted["token"]) as session:
        await call(session, "note_create", {"path": "plans/later", "content": "after\n"})
    center.admin("POST", "/v1/members", {"id": "bob", "vaults": ["team"]})
    host.stop()
    shutil.rmtree(center.data_dir)
    shutil.rmtree(host.vaults)
    if center.database_url:
        await recreate_database(center.database_url)

    restored = run_script(
        RESTORE,
        "--center",
        str(center.data_dir),
        "--node",
        f"node-a={host.vaults}",
        str(backup),
        env=host.script_env(),
    )
    assert restored.returncode == 0, restored.stderr
    assert (center.data_dir.stat().st_mode & 0o777) == 0o700
    host.start()

    health = httpx.get(f"{center.url}/healthz").json()
    assert health["status"] == "ok"  # the center verified the chain at start
    assert health["audit_seq"] == audit_seq
    export = httpx.get(
        f"{center.url}/v1/audit", headers={"Authorization": f"Bearer {center.admin_token}"}
    )
    assert export.status_code == 200
    exported = tmp_path / "export.ndjson"
    exported.write_bytes(export.content)
    verified = subprocess.run(
        [str(BIN / "secondbrain-center"), "audit", "verify", str(exported)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout
    members = {m["id"] for m in center.admin("GET", "/v1/members")["members"]}
    assert members == {"alice"}

    async with mcp_session(host.mcp_url, minted["token"]) as session:  # a pre-backup token
        note = await call(session, "note_read", {"path": "plans/q3"})
        history = await call(session, "note_history", {"path": "plans/q3"})
        found = await call(session, "note_search", {"query": "zanzibar"})
        missing = await session.call_tool("note_read", {"path": "plans/later"})
    assert "v2 zanzibar" in note["content"]
    assert len(history["revisions"]) == 2
    assert [hit["path"] for hit in found["hits"]] == ["plans/q3.md"]
    assert missing.is_error
    fresh = center.admin("POST", "/v1/tokens", {"resource": [host.mcp_url]}, token=alice)
    assert fresh["token"] != minted["token"]


def fake_backup(root: Path) -> Path:
    """A backup folder as backup.sh makes it, with one node archive and its checksums."""
    source = root / "source" / "team"
    source.mkdir(parents=True)
    (source / "note.md").write_text("# kept\n")
    backup = root / "secondbrain-20260101T000000Z"
    (backup / "nodes").mkdir(parents=True)
    with tarfile.open(backup / "nodes" / "node-a.tar", "w") as archive:
        archive.add(source, arcname="./team")
    subprocess.run("sha256sum nodes/node-a.tar > SHA256SUMS", shell=True, cwd=backup, check=True)
    return backup


def test_restore_refuses_a_damaged_backup_and_writes_nothing(tmp_path: Path) -> None:
    backup = fake_backup(tmp_path)
    with (backup / "nodes" / "node-a.tar").open("r+b") as archive:
        archive.seek(600)
        archive.write(b"X")
    target = tmp_path / "restored"
    done = run_script(RESTORE, "--node", f"node-a={target}", str(backup), env=clean_env())
    assert done.returncode == 1
    assert "does not match its SHA256SUMS" in done.stderr
    assert not target.exists()


def test_restore_never_overwrites_a_folder_that_holds_something(tmp_path: Path) -> None:
    backup = fake_backup(tmp_path)
    target = tmp_path / "restored"
    target.mkdir()
    (target / "mine.md").write_text("precious\n")
    done = run_script(RESTORE, "--node", f"node-a={target}", str(backup), env=clean_env())
    assert done.returncode == 1
    assert "is not empty" in done.stderr
    assert [p.name for p in target.iterdir()] == ["mine.md"]
    assert (target / "mine.md").read_text() == "precious\n"


def test_restore_puts_a_node_back_onto_an_empty_folder(tmp_path: Path) -> None:
    backup = fake_backup(tmp_path)
    target = tmp_path / "restored"
    done = run_script(RESTORE, "--node", f"node-a={target}", str(backup), env=clean_env())
    assert done.returncode == 0, done.stderr
    assert (target / "team" / "note.md").read_text() == "# kept\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name one destination folder"),
        (["DEST"], "nothing to back up"),
        (["--node", "../x=elsewhere", "DEST"], "use NAME=DIR with a plain name"),
        (["--center", "MISSING", "DEST"], "does not exist"),
        (["--bogus", "DEST"], "unknown option --bogus"),
    ],
)
def test_backup_explains_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    named = {"DEST": str(tmp_path / "out"), "MISSING": str(tmp_path / "missing")}
    args = [named.get(a, a) for a in args]
    done = run_script(BACKUP, *args, env=clean_env())
    assert done.returncode == 1
    assert message in done.stderr


def test_both_scripts_print_their_usage() -> None:
    for script, first in ((BACKUP, "Back up a secondbrain host"), (RESTORE, "Restore a backup")):
        done = run_script(script, "--help", env=clean_env())
        assert done.returncode == 0
        assert done.stdout.startswith(first)
        assert "#" not in done.stdout.splitlines()[0]


def test_backup_refuses_to_skip_the_audit_check_unless_told(tmp_path: Path) -> None:
    """Without secondbrain-center at hand the guide's promised verification cannot run: the
    backup says so and copies nothing, unless --no-verify asks for an unverified one."""
    center = tmp_path / "center"
    center.mkdir()
    sqlite3.connect(center / "center.db").close()
    (center / "audit.jsonl").write_text("")
    elsewhere = tmp_path / "checkout" / "deploy" / "backup"  # no .venv beside this copy
    elsewhere.mkdir(parents=True)
    script = Path(shutil.copy(BACKUP, elsewhere / "backup.sh"))
    bare = {**clean_env(), "PATH": "/usr/bin:/bin"}
    refused = run_script(script, "--center", str(center), str(tmp_path / "out"), env=bare)
    assert refused.returncode == 1
    assert "cannot verify the audit log: secondbrain-center is not on PATH" in refused.stderr
    assert "--no-verify" in refused.stderr
    assert not (tmp_path / "out").exists()
    kept = run_script(
        script, "--center", str(center), "--no-verify", str(tmp_path / "out"), env=bare
    )
    assert kept.returncode == 0, kept.stderr
    assert "the copied audit log was not verified (--no-verify)" in kept.stderr
    assert (Path(kept.stdout.strip()) / "center" / "audit.jsonl").is_file()
