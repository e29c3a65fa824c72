"""The deployment files keep their promises without a Docker engine: the Dockerfile is
multi-stage with non-root, shell-free runtime images; compose.yaml has the topology the
design names; Caddy accepts its Caddyfile; systemd accepts the hardened units; the Traefik
and Prometheus examples route and scrape what the compose file runs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from center.config import Settings
from tickets import SigningKey
from vault_node.config import NodeConfig

from .conftest import BIN, ROOT
from .dockerfile import exec_form, healthcheck_command, resolve, stages

DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
DEPLOY = ROOT / "deploy"
RUNTIME_TARGETS = {"center": "secondbrain-center", "node": "secondbrain"}


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def test_the_dockerfile_builds_in_one_stage_and_runs_in_another() -> None:
    found = stages(DOCKERFILE)
    assert "build" in found
    for target in RUNTIME_TARGETS:
        chain = resolve(found, target)
        assert all(stage.name != "build" for stage in chain)
        copies = [args for stage in chain for args in stage.all("COPY")]
        assert any(args.startswith("--from=build ") for args in copies), target
        assert not any(stage.all("ADD") for stage in chain)  # no remote fetches, no tarballs


@pytest.mark.parametrize("target", sorted(RUNTIME_TARGETS))
def test_each_runtime_image_runs_as_a_user_that_is_not_root(target: str) -> None:
    stage = stages(DOCKERFILE)[target]
    user = stage.last("USER")
    assert user is not None
    assert user.split(":")[0] not in ("root", "0")


@pytest.mark.parametrize(("target", "script"), sorted(RUNTIME_TARGETS.items()))
def test_each_runtime_image_checks_its_health_without_a_shell(target: str, script: str) -> None:
    stage = stages(DOCKERFILE)[target]
    command = healthcheck_command(stage)
    assert command is not None, "HEALTHCHECK must be exec form: CMD [...]"
    assert command[:2] == [script, "healthcheck"]
    assert exec_form(stage.last("ENTRYPOINT") or "") == [script]
    assert exec_form(stage.last("CMD") or "") == ["serve"]
    assert (BIN / script).exists()


def test_the_build_context_holds_only_what_the_build_copies() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "*" in ignored  # everything is excluded unless named
    allowed = {line.removeprefix("!").rstrip("/") for line in ignored if line.startswith("!")}
    sources = {
        word.rstrip("/").removeprefix("./")
        for stage in stages(DOCKERFILE).values()
        for args in stage.all("COPY")
        if not args.startswith("--from")
        for word in args.split()[:-1]
    }
    assert sources == allowed


def test_compose_runs_caddy_a_center_and_two_nodes_with_their_own_volumes() -> None:
    services = compose()["services"]
    assert {"caddy", "center", "node-a", "node-b"} <= set(services)
    for name in ("caddy", "center", "node-a", "node-b"):
        assert "profiles" not in services[name], name
    mounts = {name: services[name]["volumes"] for name in ("node-a", "node-b")}
    volumes = {name: [v.split(":")[0] for v in mounts[name][:1]] for name in mounts}
    assert volumes["node-a"] != volumes["node-b"]
    assert set(volumes["node-a"]) <= set(compose()["volumes"])
    # Besides its own volume, each node reads the same trust folder, and only reads it.
    trust = "${SECONDBRAIN_NODE_TRUST_DIR:-./deploy/trust}:/etc/secondbrain/trust:ro"
    assert mounts["node-a"][1:] == mounts["node-b"][1:] == [trust]
    assert (ROOT / "deploy" / "trust" / "README.md").is_file()
    published = [name for name, service in services.items() if "ports" in service]
    assert sorted(published) == ["caddy", "prometheus"]
    assert all(p.startswith("127.0.0.1:") for p in services["prometheus"]["ports"])


def test_compose_profiles_add_postgresql_and_prometheus() -> None:
    services = compose()["services"]
    assert services["postgres"]["profiles"] == ["postgres"]
    assert services["prometheus"]["profiles"] == ["prometheus"]
    assert services["center"]["depends_on"]["postgres"]["required"] is False
    scraped = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {
        target
        for job in scraped["scrape_configs"]
        for group in job["static_configs"]
        for target in group["targets"]
    }
    assert targets == {"node-a:9100", "node-b:9100"}
    for node in ("node-a", "node-b"):
        assert services[node]["environment"]["SECONDBRAIN_METRICS_LISTEN"] == ":9100"


def test_compose_runs_the_services_hardened_and_takes_secrets_from_the_environment() -> None:
    services = compose()["services"]
    for name in ("center", "node-a", "node-b"):
        service = services[name]
        assert service["read_only"] is True
        assert service["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in service["security_opt"]
    center = services["center"]["environment"]
    for secret in ("SECONDBRAIN_CENTER_SECRET", "SECONDBRAIN_CENTER_ADMIN_TOKEN"):
        assert center[secret].startswith(f"${{{secret}:?"), secret  # required, never a default


def test_compose_builds_from_the_dockerfile_targets() -> None:
    services = compose()["services"]
    assert services["center"]["build"]["target"] == "center"
    for node in ("node-a", "node-b"):
        assert services[node]["build"]["target"] == "node"
        assert services[node]["build"]["dockerfile"] == "docker/Dockerfile"


def test_caddy_accepts_the_caddyfile_and_routes_each_host(tmp_path: Path) -> None:
    env = {
        "SECONDBRAIN_DOMAIN": "example.com",
        "ACME_EMAIL": "ops@example.com",
        "HOME": str(tmp_path),
    }
    adapted = subprocess.run(
        [
            "caddy",
            "adapt",
            "--config",
            str(DEPLOY / "caddy" / "Caddyfile"),
            "--adapter",
            "caddyfile",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert adapted.returncode == 0, adapted.stderr
    for host, upstream in (
        ("center.example.com", "center:2021"),
        ("node-a.example.com", "node-a:2020"),
        ("node-b.example.com", "node-b:2020"),
    ):
        assert host in adapted.stdout
        assert upstream in adapted.stdout
    assert "brain.example.com" in adapted.stdout  # the one address, spread over both nodes
    assert '"selection_policy":{"policy":"random"}' in adapted.stdout


@pytest.mark.parametrize("unit", ["secondbrain-center.service", "secondbrain-node@.service"])
def test_systemd_accepts_the_hardened_units(unit: str, tmp_path: Path) -> None:
    text = (DEPLOY / "systemd" / unit).read_text(encoding="utf-8")
    for setting in (
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=\n",
        "SystemCallFilter=@system-service",
    ):
        assert setting in text, setting
    assert "DynamicUser=yes" in text or "User=secondbrain" in text
    # systemd-analyze insists on an existing executable: point ExecStart at the venv's.
    local = text.replace("/opt/secondbrain/bin/", f"{BIN}/")
    name = unit.replace("@.", "@node-a.")
    (tmp_path / name).write_text(local)
    verified = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(tmp_path / name)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == ""


def test_traefik_and_nginx_route_every_host_to_its_own_service() -> None:
    dynamic = yaml.safe_load((DEPLOY / "traefik" / "secondbrain.yml").read_text())["http"]
    routers = dynamic["routers"]
    assert {name: router["service"] for name, router in routers.items()} == {
        "center": "center",
        "node-a": "node-a",
        "node-b": "node-b",
    }
    assert all("Host(`" in router["rule"] for router in routers.values())
    assert set(dynamic["services"]) == {"center", "node-a", "node-b"}
    static = yaml.safe_load((DEPLOY / "traefik" / "traefik.yml").read_text())
    assert static["providers"]["file"]["filename"].endswith("secondbrain.yml")
    nginx = (DEPLOY / "nginx" / "secondbrain.conf").read_text()
    for host in ("center.example.com", "node-a.example.com", "node-b.example.com"):
        assert f"server_name {host};" in nginx
    assert nginx.count("proxy_pass http://secondbrain_") == 3


def test_the_deploy_examples_name_no_path_of_a_build_machine() -> None:
    files = [COMPOSE, DOCKERFILE, *[p for p in DEPLOY.rglob("*") if p.is_file()]]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for local in (str(ROOT), str(Path.home())):  # where this checkout and its user live
            assert f"{local}/" not in text, (path, local)


INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?:(?P<op>:[-?+])(?P<arg>[^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}`, `${VAR:?error}` and `${VAR:+replacement}`."""

    def one(match: re.Match[str]) -> str:
        value, op, arg = env.get(match["name"], ""), match["op"], match["arg"]
        if op == ":-":
            return value or arg
        if op == ":+":
            return arg if value else ""
        if op == ":?" and not value:
            raise AssertionError(f"{match['name']} is required: {arg}")
        return value

    return INTERPOLATION.sub(one, text)


ENV = {
    "SECONDBRAIN_DOMAIN": "example.com",
    "ACME_EMAIL": "ops@example.com",
    "SECONDBRAIN_CENTER_SECRET": SigningKey.generate().export_secret(),
    "SECONDBRAIN_CENTER_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters",
    "SECONDBRAIN_NODE_A_CREDENTIAL": "sbn_" + "a" * 43,
}


def test_every_setting_compose_passes_is_one_the_services_know() -> None:
    services = compose()["services"]  # compose interpolates values after parsing the YAML
    center = {
        key.removeprefix("SECONDBRAIN_CENTER_").lower(): interpolate(value, ENV)
        for key, value in services["center"]["environment"].items()
    }
    assert Settings(**center).issuer == "https://center.example.com"
    for node in ("node-a", "node-b"):
        environment = services[node]["environment"]
        # The one variable that is not the node's own: the TLS library's trust anchors.
        assert {key for key in environment if not key.startswith("SECONDBRAIN_")} == {
            "SSL_CERT_FILE"
        }
        values = {
            key.removeprefix("SECONDBRAIN_").lower(): interpolate(value, ENV)
            for key, value in environment.items()
            if key.startswith("SECONDBRAIN_")
        }
        assert set(values) <= set(NodeConfig.model_fields), node
        config = NodeConfig(**{**values, "data_dir": "/data"})
        assert config.resource == f"https://{node}.example.com/mcp"
        assert config.heartbeat is (node == "node-a")  # only node-a's credential is set


def test_the_env_example_names_every_variable_compose_requires() -> None:
    example = (DEPLOY / "compose.env.example").read_text(encoding="utf-8")
    required = {m["name"] for m in INTERPOLATION.finditer(COMPOSE.read_text()) if m["op"] == ":?"}
    assert required
    for name in required:
        assert re.search(rf"^#?{name}=", example, re.MULTILINE), name
