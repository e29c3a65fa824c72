"""The import graph of our own packages: no runtime cycle, and no library reaching a service.

Read from the source, not by importing, so a cycle shows as the modules that form it. An
import counts when it runs as its module loads: at module level, including under `if` and
`try`, but not under `if TYPE_CHECKING:` and not inside a function (those run later).
A module's own packages are loading already when it runs, yet `from P import x` (and
`import P.x`) still reads P's namespace, which P's `__init__` may be filling: that is an
edge to P (tools/__init__ ↔ the tool modules was such a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "tickets": ROOT / "libs/tickets/src/tickets",
    "vault_core": ROOT / "libs/vault_core/src/vault_core",
    "vault_node": ROOT / "services/node/src/vault_node",
    "center": ROOT / "services/center/src/center",
}
LIBRARIES = ("tickets", "vault_core")
SERVICES = ("vault_node", "center")
FACED = ("vault_core",)
"""Libraries whose services take names only from a face: the package's `__init__` or a
group's, each naming what it offers in `__all__` (docs/vault-core.md#modules)."""


def modules(sources: Mapping[str, Path] = SOURCES) -> dict[str, Path]:
    """Every module of our packages by dotted name (a package is its `__init__`)."""
    found: dict[str, Path] = {}
    for package, folder in sources.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _runtime(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _runtime(node.body)
            yield from _runtime(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _runtime(block)
            for handler in node.handlers:
                yield from _runtime(handler.body)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_face(path: Path) -> bool:
    """Whether a package's `__init__` only gathers names (defines no function or class)."""
    return not any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
    )


def _requests(body: list[ast.stmt], package: str) -> Iterator[tuple[str, str | None]]:
    """(P, x) for each name an import statement takes from a module P: `from P import x`,
    and `import P.x` (which binds P); (P, None) for `import P` of a top-level package."""
    for node in _runtime(body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                source, _, attribute = alias.name.rpartition(".")
                yield (source, attribute) if source else (attribute, None)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            base = ".".join(anchor[: len(anchor) - node.level + 1] + ([base] if base else []))
        for alias in node.names:
            yield base, alias.name


def imports_of(name: str, path: Path, known: dict[str, Path], faces: set[str]) -> set[str]:
    """The modules of ours that loading `name` loads or reads directly.

    `from P import x` loads P's packages, then P, then P.x when that is a submodule; and it
    takes x from P's namespace. A package `name` sits in is loading already, so loading it
    runs nothing, but taking a name from it depends on its `__init__`: always, unless x is
    a submodule and P a face (then x is the submodule, however far `__init__` has got)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    reads: set[str] = set()
    for source, attribute in _requests(ast.parse(path.read_text(encoding="utf-8")).body, package):
        submodule = f"{source}.{attribute}"
        targets.add(submodule if submodule in known else source)
        if attribute is not None and (submodule not in known or source not in faces):
            reads.add(source)
    loaded = {".".join(t.split(".")[:n]) for t in targets for n in range(1, t.count(".") + 2)}
    own = {".".join(name.split(".")[:n]) for n in range(1, name.count(".") + 2)}
    return {target for target in (loaded - own) | (reads - {name}) if target in known}


def graph(sources: Mapping[str, Path] = SOURCES) -> dict[str, set[str]]:
    known = modules(sources)
    faces = {name for name, path in known.items() if path.name == "__init__.py" and _is_face(path)}
    return {name: imports_of(name, path, known, faces) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_package_init_is_a_face() -> None:
    """A package's `__init__` only gathers what its modules define: code in it would load
    with the first of its modules anyone imports, and turn every sibling import into a cycle."""
    defining = sorted(
        name
        for name, path in modules().items()
        if path.name == "__init__.py" and not _is_face(path)
    )
    assert defining == []


def test_the_graph_sees_our_modules() -> None:
    edges = graph()
    assert "vault_node.dispatch" in edges
    assert "vault_node.registry" in edges["vault_node.dispatch"]
    assert "vault_core.edit" in edges["vault_core.library"]


def test_no_runtime_import_cycle() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_taking_a_name_from_a_package_one_is_in_is_an_edge_to_it(tmp_path: Path) -> None:
    files = {
        # a package whose __init__ holds code and imports a module that imports it back
        "busy/__init__.py": "from busy import tool\n\n\ndef dispatch() -> None: ...\n",
        "busy/tool.py": "from busy import shared\n",
        "busy/shared.py": "",
        # a face: a sibling taken as a submodule is no edge to it, a name it gathers is
        "face/__init__.py": "from face.part import X\nfrom face.late import Y\n",
        "face/part.py": "from face import other\n\nX = 1\n",
        "face/other.py": "",
        "face/late.py": "from face import X\n\nY = 2\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = graph({"busy": tmp_path / "busy", "face": tmp_path / "face"})
    assert edges["face.part"] == {"face.other"}
    assert cycles(edges) == [["busy", "busy.tool"], ["face", "face.late"]]


def test_no_library_imports_a_service() -> None:
    edges = graph()
    reaching = sorted(
        f"{name} imports {target}"
        for name, targets in edges.items()
        if name.split(".")[0] in LIBRARIES
        for target in targets
        if target.split(".")[0] in SERVICES
    )
    assert reaching == []


def test_services_do_not_import_each_other() -> None:
    edges = graph()
    crossing = sorted(
        f"{name} imports {target}"
        for name, targets in edges.items()
        for target in targets
        if name.split(".")[0] in SERVICES
        and target.split(".")[0] in SERVICES
        and target.split(".")[0] != name.split(".")[0]
    )
    assert crossing == []


def exported(sources: Mapping[str, Path] = SOURCES) -> dict[str, set[str]]:
    """Each face of the FACED libraries (a package `__init__`) with the names in its `__all__`."""
    faces: dict[str, set[str]] = {}
    for name, path in modules(sources).items():
        if name.split(".")[0] not in FACED or path.name != "__init__.py":
            continue
        faces[name] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = (
                node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            )
            if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
                faces[name] = {
                    item.value for item in ast.walk(node.value) if isinstance(item, ast.Constant)
                }
    return faces


def reaches_past_a_face(path: Path, faces: dict[str, set[str]]) -> list[str]:
    """Each import in `path`, wherever it stands, of a FACED library's module that is no
    face, or of a name its face does not export (a group face counts as a name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name.split(".")[0] in FACED and alias.name not in faces
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FACED:
            module = node.module or ""
            found += [
                f"line {node.lineno}: from {module} import {alias.name}"
                for alias in node.names
                if alias.name not in faces.get(module, set())
                and f"{module}.{alias.name}" not in faces
            ]
    return found


def test_services_take_from_vault_core_only_what_its_faces_export() -> None:
    faces = exported()
    assert {"vault_core", "vault_core.index", "vault_core.search"} <= set(faces)
    reaching = sorted(
        f"{name} {line}"
        for name, path in modules().items()
        if name.split(".")[0] in SERVICES
        for line in reaches_past_a_face(path, faces)
    )
    assert reaching == []


def test_a_private_module_or_an_unexported_name_is_found(tmp_path: Path) -> None:
    faces = {"vault_core": {"Index"}, "vault_core.search": {"answers"}}
    module = tmp_path / "m.py"
    module.write_text(
        "from vault_core import Index, search\n"
        "from vault_core.search import answers\n"
        "from vault_core.search.fts import Filters\n"
        "from vault_core import secret\n"
        "def later() -> None:\n"
        "    import vault_core.index.store\n",
        encoding="utf-8",
    )
    assert reaches_past_a_face(module, faces) == [
        "line 3: from vault_core.search.fts import Filters",
        "line 4: from vault_core import secret",
        "line 6: import vault_core.index.store",
    ]
