"""The map of the code holds: every module has a row in its package's table, and every
error class a line in its package's error tree.

A newcomer finds a module through the `## Modules` table of its package's page; a module
added without a row fails here, naming the module and the table to add it to. Subpackage
modules are written with their folder (`tools/read`, `oauth.token`); later names in one
cell take the folder of the first (`tools/find`, `read`, `write`). Alembic's migration
scripts are listed by `make migration`, not by hand, and are left out.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "vault_core": (ROOT / "libs/vault_core/src/vault_core", ROOT / "docs/vault-core.md"),
    "tickets": (ROOT / "libs/tickets/src/tickets", ROOT / "docs/tickets.md"),
    "vault_node": (ROOT / "services/node/src/vault_node", ROOT / "docs/node.md"),
    "center": (ROOT / "services/center/src/center", ROOT / "docs/center.md"),
}
LEFT_OUT = ("db/alembic",)
"""Folders whose modules need no row: Alembic's environment and migration scripts."""


def package_modules(folder: Path) -> set[str]:
    """Each module as its path below the package with `.` between parts (`tools.read`); a
    subpackage is its folder's name; the package's own `__init__` is the page itself."""
    found = set()
    for path in folder.rglob("*.py"):
        relative = path.relative_to(folder)
        if any(relative.as_posix().startswith(prefix) for prefix in LEFT_OUT):
            continue
        parts = relative.with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found.add(".".join(parts))
    return found


def table_modules(page: Path) -> set[str]:
    """The modules named in the first column of the page's `## Modules` table."""
    text = page.read_text(encoding="utf-8")
    section = re.search(r"^## Modules\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if section is None:
        return set()
    named = set()
    for line in section.group(1).splitlines():
        if not line.startswith("|") or line.startswith("| ---"):
            continue
        folder = ""
        for written in re.findall(r"`([\w./]+)`", line.split("|")[1]):
            name = written.replace("/", ".")
            if "." in name:
                folder = name.rpartition(".")[0] + "."
                named.add(name)
            else:
                named.add(folder + name)
    return named


@pytest.mark.parametrize("package", sorted(TABLES))
def test_every_module_has_a_row_in_its_package_table(package: str) -> None:
    folder, page = TABLES[package]
    missing = sorted(package_modules(folder) - table_modules(page))
    where = f"the `## Modules` table of {page.relative_to(ROOT)}"
    assert not missing, "\n".join(
        f"module {package}.{name} has no row in {where}" for name in missing
    )


@pytest.mark.parametrize("package", sorted(TABLES))
def test_every_row_of_a_table_names_a_module_that_exists(package: str) -> None:
    folder, page = TABLES[package]
    stale = sorted(table_modules(page) - package_modules(folder))
    assert not stale, f"{page.relative_to(ROOT)} lists modules {package} does not have: {stale}"


def error_classes(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def tree_names(text: str) -> set[str]:
    return set(re.findall(r"^[\s│├└─]*([A-Z]\w*(?:Error|Failure))\b", text, re.MULTILINE))


@pytest.mark.parametrize("package", sorted(TABLES))
def test_the_error_tree_in_errors_py_names_every_error_class(package: str) -> None:
    folder, _ = TABLES[package]
    module = folder / "errors.py"
    docstring = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
    missing = sorted(error_classes(module) - tree_names(docstring))
    assert not missing, f"the tree in {module.relative_to(ROOT)}'s docstring lacks {missing}"


def test_the_vault_core_page_draws_the_whole_error_tree() -> None:
    folder, page = TABLES["vault_core"]
    section = page.read_text(encoding="utf-8").split("## Errors", 1)[1].split("\n## ", 1)[0]
    missing = sorted(error_classes(folder / "errors.py") - tree_names(section))
    assert not missing, f"the error tree of {page.relative_to(ROOT)} lacks {missing}"


def test_cells_with_a_folder_lend_it_to_the_names_after_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "## Modules\n\n| module | what |\n| --- | --- |\n"
        "| `tools/find`, `read` | tools (not `write`) |\n| `oauth.token` | t |\n| `app` | a |\n"
        "\n## Next\n\n| `ignored` | x |\n",
        encoding="utf-8",
    )
    assert table_modules(page) == {"tools.find", "tools.read", "oauth.token", "app"}
