"""`secondbrain healthcheck` and `secondbrain-center healthcheck`, the verbs the images'
HEALTHCHECKs run: exit 0 for a healthy service, 1 for anything else, no shell needed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from vault_node.cli import NO_SNAPSHOT
from vault_node.testing import free_port

from .conftest import BIN, CenterSetup, Service, clean_env, start_node, write_node_config
from .dockerfile import healthcheck_command, stages
from .test_deploy_files import DOCKERFILE

pytestmark = pytest.mark.slow


def start_default_node(root: Path, center_url: str) -> tuple[Service, str]:
    """A node under `root` serving one empty vault, `default`; and its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (root / "vaults" / "default").mkdir(parents=True)
    config = write_node_config(
        root / "node.yaml",
        public_url=base,
        listen=f"127.0.0.1:{port}",
        data_dir=root / "vaults",
        center_url=center_url,
    )
    return start_node(config, base, root / "node.log"), base


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("health")
    center = CenterSetup(root / "center")
    started: list[Service] = [center.start(root / "center.log")]
    node, base = start_default_node(root, center.url)
    started.append(node)
    try:
        yield {"center": center.url, "node": base}
    finally:
        for service in started:
            service.stop()


def probe(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(), check=False)


@pytest.mark.parametrize("target", ["center", "node"])
def test_the_image_healthcheck_passes_on_a_running_service(
    target: str, services: dict[str, str]
) -> None:
    command = healthcheck_command(stages(DOCKERFILE)[target])
    assert command is not None
    url = command[-1].replace(command[-1].split("/healthz")[0], services[target])
    done = probe([str(BIN / command[0]), *command[1:-1], url])
    assert (done.returncode, done.stdout.strip()) == (0, "healthy")


@pytest.mark.parametrize("script", ["secondbrain", "secondbrain-center"])
@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("closed", "ConnectError"),
        ("/mcp", "HTTP 405"),
        ("/.well-known/oauth-protected-resource", "status is not ok"),
        ("/nowhere", "HTTP 404"),
        ("not a url", "UnsupportedProtocol"),
    ],
)
def test_the_healthcheck_fails_on_anything_but_a_healthy_answer(
    script: str, where: str, reason: str, services: dict[str, str]
) -> None:
    url = {
        "closed": f"http://127.0.0.1:{free_port()}/healthz",
        "not a url": "127.0.0.1/healthz",
    }.get(where, services["node"] + where)
    done = probe([str(BIN / script), "healthcheck", url])
    assert (done.returncode, done.stdout.strip()) == (1, f"unhealthy: {url}: {reason}")


def test_a_node_without_a_revocation_snapshot_is_unhealthy(tmp_path: Path) -> None:
    """A first start that cannot reach its center answers /healthz but refuses every
    token: the check says so, so compose's `service_healthy` waits for a usable node."""
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    node, base = start_default_node(tmp_path, nowhere)
    try:
        health = httpx.get(f"{base}/healthz", timeout=5).json()
        assert (health["status"], health["revocation_age_seconds"]) == ("ok", None)
        done = probe([str(BIN / "secondbrain"), "healthcheck", f"{base}/healthz"])
    finally:
        node.stop()
    assert (done.returncode, done.stdout.strip()) == (
        1,
        f"unhealthy: {base}/healthz: {NO_SNAPSHOT}",
    )
