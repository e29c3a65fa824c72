"""What `make` installs: `make run` the runtime packages only, `make setup` (and so `make
test` and `make lint`, which `.ci/run` calls) the developer tools too. Checked with
`make -n` against a .venv that does not exist, so nothing is installed here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "pip install" in line]


def test_make_run_installs_the_runtime_packages_only(tmp_path: Path) -> None:
    installs = planned("run", tmp_path / "venv")
    assert installs[-1].endswith("pip install --quiet -e .")
    assert not any("[dev]" in line for line in installs)


@pytest.mark.parametrize("target", ["setup", "test", "lint"])
def test_setup_test_and_lint_install_the_developer_tools(target: str, tmp_path: Path) -> None:
    assert planned(target, tmp_path / "venv")[-1].endswith("pip install --quiet -e '.[dev]'")


def test_a_developer_venv_serves_make_run_without_another_install(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    venv.mkdir()
    for stamp in (".installed", ".runtime"):  # what `make setup` leaves
        (venv / stamp).touch()
    assert planned("run", venv) == []
