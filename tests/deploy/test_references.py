"""The generated references cannot drift: docs/reference/*.md are exactly what the
generators print (run `make docs` after changing a tool, a route or a schema), and the
operator guide names every setting of both services."""

from __future__ import annotations

import re
from pathlib import Path

from center.config import Settings
from center.reference import METHODS, api_page, openapi, settings_page
from vault_node.config import NodeConfig
from vault_node.reference import tools_page
from vault_node.registry import TOOLS, params_of

from .conftest import ROOT

DOCS = ROOT / "docs"
HINT = "is out of date: run `make docs` and commit the result"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_the_tool_reference_is_the_generated_one() -> None:
    assert read(DOCS / "reference" / "tools.md") == tools_page(), f"tools.md {HINT}"


def test_the_center_api_reference_is_the_generated_one() -> None:
    assert read(DOCS / "reference" / "center-api.md") == api_page(), f"center-api.md {HINT}"


def test_the_center_settings_reference_is_the_generated_one() -> None:
    page = read(DOCS / "reference" / "center-settings.md")
    assert page == settings_page(), f"center-settings.md {HINT}"


def test_the_tool_reference_documents_every_parameter_of_every_tool() -> None:
    page = tools_page()
    for tool in TOOLS:
        section = page.split(f"## `{tool.name}`", 1)[1].split("\n## ", 1)[0]
        for name in params_of(tool):
            assert f"| `{name}` |" in section, (tool.name, name)


def test_the_center_api_reference_lists_every_route() -> None:
    page = api_page()
    for path, item in openapi()["paths"].items():
        for method in METHODS:
            if method in item:
                assert f"### `{method.upper()} {path}`" in page


def test_the_operator_guide_names_every_setting_of_both_services() -> None:
    guide = read(DOCS / "operator-guide.md")
    assert [name for name in NodeConfig.model_fields if f"| `{name}` |" not in guide] == []
    assert "reference/center-settings.md" in guide  # the generated table of every variable
    settings = settings_page()
    assert all(f"`SECONDBRAIN_CENTER_{n.upper()}`" in settings for n in Settings.model_fields)


def test_the_docs_link_only_to_files_that_exist() -> None:
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", read(page)):
            assert (page.parent / target).exists(), (page.name, target)
