"""The `secondbrain` command: run the node, check its configuration, manage vaults.

`serve` runs the MCP server; `validate` checks a configuration without starting it;
the `vault` verbs work directly on a data directory; `up` (vault_node.up) starts a center
and a node on loopback. Each verb imports what it uses when it runs, so `version` and
`--help` load no server, index or model (bench/bench_cli_start.py measures it).
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    import uvicorn
    from rich.console import Console

    from vault_core import Report
    from vault_node.config import NodeConfig

app = typer.Typer(
    help="secondbrain: Markdown vaults for AI agents. Verbs that work on a data directory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
vault_app = typer.Typer(help="Create and check vaults in a data directory.", no_args_is_help=True)
app.add_typer(vault_app, name="vault")


@functools.cache
def console() -> Console:
    from rich.console import Console  # noqa: PLC0415

    return Console()


UpDataDir = Annotated[
    Path,
    typer.Option(
        "--data-dir",
        envvar="SECONDBRAIN_DATA_DIR",
        help="Folder for everything `up` keeps: the center's secrets and database (center/),"
        " the vaults (vaults/), node.yaml and the logs (logs/).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
ConfigPath = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML configuration file; without it $SECONDBRAIN_CONFIG or "
        "/etc/secondbrain/config.yaml is read if it exists.",
    ),
]


@app.command()
def version() -> None:
    """Print the installed version."""
    from importlib.metadata import version as package_version  # noqa: PLC0415

    console().print(f"secondbrain {package_version('secondbrain')}")


VaultsDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="SECONDBRAIN_DATA_DIR",
        help="Folder that holds one folder per vault. Default: the data_dir of the configured"
        " node (--config, $SECONDBRAIN_CONFIG, /etc/secondbrain/config.yaml, or the"
        " data/node.yaml `secondbrain up` writes), else data/vaults.",
        show_default=False,
    ),
]


def vaults_dir(data_dir: Path | None, config_path: Path | None) -> tuple[Path, str]:
    """The folder a `vault` verb works in, and a line saying which node serves it."""
    from vault_node.config import UP_CONFIG, configured_data_dir  # noqa: PLC0415

    configured = configured_data_dir(config_path)
    if data_dir is None and configured is not None:
        return configured[0], f"the node configured in {configured[1]} serves it"
    if data_dir is None:
        data_dir = UP_CONFIG.parent / "vaults"
    if configured is None:
        return data_dir, f"a node serves it if its data_dir is {data_dir.resolve()}"
    if data_dir.resolve() == configured[0].resolve():
        return data_dir, f"the node configured in {configured[1]} serves it"
    return data_dir, (
        f"note: the node configured in {configured[1]} looks in {configured[0]}, not here"
    )


@vault_app.command("create")
def vault_create(
    name: Annotated[str, typer.Argument(help="Vault name: a-z, 0-9, '_' and '-', up to 64.")],
    data_dir: VaultsDir = None,
    layout: Annotated[
        str, typer.Option(help="wiki-raw, zettelkasten, para or empty.")
    ] = "wiki-raw",
    config_path: ConfigPath = None,
) -> None:
    """Create a vault with a layout's folders, templates and instructions. A running node
    whose data_dir holds it finds it within its vault_scan_interval (5 s)."""
    from vault_core import layouts  # noqa: PLC0415

    folder, served = vaults_dir(data_dir, config_path)
    created = layouts.create(folder, name, layout)
    # plain: a path stays on one line whatever the terminal width
    print(f"created vault {created.vault} with layout {created.layout} in {folder.resolve()}")
    for directory in created.directories:
        print(f"  {directory}/")
    print(served)


@vault_app.command("check")
def vault_check(
    name: Annotated[str, typer.Argument(help="The vault to check.")],
    data_dir: VaultsDir = None,
    as_json: Json = False,
    config_path: ConfigPath = None,
) -> None:
    """Parse every note of a vault and list what a person should fix."""
    from vault_core import Vault, check_vault, paths  # noqa: PLC0415

    data_dir = vaults_dir(data_dir, config_path)[0]
    root = data_dir / paths.check_vault_name(name)
    if not root.is_dir():
        raise VaultCliError(f"unknown vault: {name}; create it with `secondbrain vault create`")
    report = check_vault(Vault(root, name))
    print_report(report, as_json=as_json)
    if report.problems:
        raise typer.Exit(1)


@app.command()
def up(
    data_dir: UpDataDir = Path("data"),
    center_port: Annotated[
        int, typer.Option(min=1, max=65535, help="Loopback port of the center.")
    ] = 2021,
    node_port: Annotated[
        int, typer.Option(min=1, max=65535, help="Loopback port of the node (MCP URL).")
    ] = 2020,
    as_json: Json = False,
) -> None:
    """Start a center and one node on loopback with a demo vault; print the MCP URL, a
    token and client configuration. Ctrl-C stops both."""
    from vault_node.up import UpError, UpOptions  # noqa: PLC0415
    from vault_node.up import run as run_up  # noqa: PLC0415

    try:
        code = run_up(UpOptions(data_dir, center_port, node_port, as_json))
    except UpError as exc:
        print(f"error: {exc}", file=sys.stderr)  # plain: one line whatever the terminal width
        raise typer.Exit(2) from None
    raise typer.Exit(code)


@app.command()
def serve(config_path: ConfigPath = None) -> None:
    """Run the node: MCP on /mcp, health on /healthz (settings: docs/node.md)."""
    import asyncio  # noqa: PLC0415

    import structlog  # noqa: PLC0415

    from vault_node.app import create_app, create_metrics_app, serve_all  # noqa: PLC0415
    from vault_node.config import DEFAULT_CONFIG, load_config, setting_sources  # noqa: PLC0415
    from vault_node.lock import NODE_LOCK, exclusive  # noqa: PLC0415 - tickets: only here
    from vault_node.log import configure_logging  # noqa: PLC0415

    config = load_config(config_path)
    # Before anything under data_dir is opened: one writer per index and git repository.
    with exclusive(config.data_dir, NODE_LOCK, "secondbrain serve"):
        configure_logging(config.log_level)
        if overridden := setting_sources(config_path).overridden:
            structlog.get_logger("vault_node").warning(
                "config_env_overrides",
                settings=list(overridden),
                hint="the environment beats the file; `secondbrain validate` names them",
            )
        source = config_path or Path(os.environ.get("SECONDBRAIN_CONFIG", "") or DEFAULT_CONFIG)
        listener = bind(*config.host_port())  # before any vault is opened and indexed
        node_app = create_app(config, config_path=source if source.is_file() else None)
        side = None
        if config.metrics and config.metrics_listen:
            side = _server(
                create_metrics_app(node_app.state.node), *config.host_port(config.metrics_listen)
            )
        main = _server(node_app, *config.host_port())
        # The loop uvicorn would pick itself (uvloop where installed): its wake-ups from the
        # worker threads are cheaper, 0.05-0.1 ms a tool call in bench/bench_node.py.
        with asyncio.Runner(loop_factory=main.config.get_loop_factory()) as runner:
            runner.run(serve_all(main, side, [listener]))


def bind(host: str, port: int) -> socket.socket:
    """The main listener's socket, bound now: a taken port is one line, not a traceback
    after start-up has indexed every vault."""
    from vault_node.errors import ListenError  # noqa: PLC0415

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        raise ListenError(host, port, reason) from None


KEEP_ALIVE = 125
"""Seconds an idle client connection stays open: longer than a proxy keeps its idle
connections to a node (Caddy 120, Traefik 90, nginx 60), so the proxy always closes first;
the other way round, a call it sends just as the node closes is lost as a 502."""


def _server(asgi: Any, host: str, port: int) -> uvicorn.Server:
    import uvicorn  # noqa: PLC0415

    return uvicorn.Server(
        uvicorn.Config(
            asgi,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_keep_alive=KEEP_ALIVE,
            timeout_graceful_shutdown=10,
        )
    )


NO_SNAPSHOT = "no revocation snapshot yet: every token is refused until the center answers"


@app.command()
def healthcheck(
    url: Annotated[
        str, typer.Argument(help="The node's health URL.")
    ] = "http://127.0.0.1:2020/healthz",
) -> None:
    """Exit 0 if URL answers 200 with status ok and the node holds a revocation snapshot
    (without one it refuses every token), else 1: a container HEALTHCHECK that needs no
    shell and no curl in the image."""
    problem = _unhealthy(url)
    print("healthy" if problem is None else f"unhealthy: {url}: {problem}")
    raise typer.Exit(0 if problem is None else 1)


def _unhealthy(url: str) -> str | None:
    import httpx  # noqa: PLC0415

    try:
        answer = httpx.get(url, timeout=5.0)
        body = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return type(exc).__name__
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    if not isinstance(body, dict) or body.get("status") != "ok":
        return "status is not ok"
    # The metrics listener's bare /healthz carries no such field: only a null one counts.
    if "revocation_age_seconds" in body and body["revocation_age_seconds"] is None:
        return NO_SNAPSHOT
    return None


@app.command()
def validate(config_path: ConfigPath = None) -> None:
    """Check the configuration (and the key file it names) without starting the node."""
    from vault_node.auth import KeySource  # noqa: PLC0415
    from vault_node.config import load_config, setting_sources  # noqa: PLC0415
    from vault_node.errors import ConfigError  # noqa: PLC0415

    config = load_config(config_path)
    sources = setting_sources(config_path)
    problems = sources.conflicts()
    if not (keys := KeySource(config).initial()):
        problems.append(f"no trusted key: {_no_keys(config)}")
    if problems:
        raise ConfigError(problems)
    print(
        f"configuration ok: serving {config.resource} from {config.data_dir}, "
        f"{len(keys)} trusted key(s), issuer {config.issuer}"
    )
    print(*sources.lines(), sep="\n")
    print(config.metrics_summary())
    print(config.heartbeat_summary())
    print(_listen_summary(*config.host_port()))


def _no_keys(config: NodeConfig) -> str:
    if config.jwks_file is not None:
        return f"jwks_file {config.jwks_file} holds none; export the center's JWKS again"
    return (
        f"{config.center_url}/.well-known/jwks.json did not answer with a key; start the"
        " center (or check center_url), or set jwks_file; every token would be refused"
    )


def _listen_summary(host: str, port: int) -> str:
    """Whether `serve` could bind `listen` now (a running node of this config holds it)."""
    from vault_node.errors import ListenError  # noqa: PLC0415

    try:
        bind(host, port).close()
    except ListenError as exc:
        return f"listen: {exc} (unless it is this node, already running)"
    return f"listen: {host}:{port} is free"


@app.command()
def reindex(
    config_path: ConfigPath = None,
    vault: Annotated[
        str | None, typer.Option(help="Only this vault (default: every vault).")
    ] = None,
    full: Annotated[
        bool, typer.Option(help="Delete the index first and build it from scratch.")
    ] = False,
) -> None:
    """Bring the search index of the vaults up to date, with a progress bar."""
    from vault_core import paths  # noqa: PLC0415
    from vault_node.config import load_config  # noqa: PLC0415
    from vault_node.lock import NODE_LOCK, exclusive  # noqa: PLC0415

    config = load_config(config_path)
    names = (
        [vault]
        if vault
        else sorted(
            p.name
            for p in config.data_dir.iterdir()
            if p.is_dir() and paths.VAULT_NAME.fullmatch(p.name)
        )
    )
    with exclusive(config.data_dir, NODE_LOCK, "secondbrain reindex"):
        for name in names:
            root = config.data_dir / paths.check_vault_name(name)
            if not root.is_dir():
                raise VaultCliError(f"unknown vault: {name}")
            _reindex(root, name, full=full)


def _reindex(root: Path, name: str, *, full: bool) -> None:
    from rich.progress import Progress  # noqa: PLC0415

    from vault_core.index import Index  # noqa: PLC0415

    if full:
        Index.remove(root)
    index = Index.open(root, name)
    try:
        with Progress(console=console(), transient=True) as bar:
            task = bar.add_task(f"indexing {name}", total=None)
            stats = index.reconcile(
                progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
    finally:
        index.close()
    console().print(
        f"{name}: {stats.files} files, {stats.changed} indexed, {stats.removed} removed, "
        f"{stats.skipped} skipped in {stats.seconds:.1f} s"
    )


class VaultCliError(Exception):
    """A CLI usage problem with a message for the person at the terminal."""


def print_report(report: Report, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=f"vault {report.vault}")
    for column in ("notes", "attachments", "links", "tags", "problems"):
        table.add_column(column, justify="right")
    row = report.as_dict()
    table.add_row(
        *(str(row[c]) for c in ("notes", "attachments", "links", "tags")), str(len(report.problems))
    )
    console().print(table)
    for problem in report.problems:
        console().print(f"[yellow]{problem['path']}[/]: {problem['problem']}")


def main() -> None:
    """Entry point: domain errors become one readable line and exit code 2."""
    try:
        app()  # standalone: usage errors, --help and exit codes are typer's
    except Exception as exc:  # noqa: BLE001 — CLI main is a boundary: one line, no traceback
        sys.exit(report(exc))


def report(exc: Exception) -> int:
    """Print `exc` as one line; the exit code. The domain errors' classes are imported
    here, not at start: a verb that failed with one has loaded its module already."""
    from vault_core import VaultError  # noqa: PLC0415
    from vault_node.errors import ConfigError, ListenError  # noqa: PLC0415
    from vault_node.lock import DataDirBusyError  # noqa: PLC0415

    if isinstance(exc, ConfigError):
        print("error: invalid configuration:", *exc.problems, sep="\n  ")
    elif isinstance(exc, VaultError | VaultCliError):
        console().print(f"[red]error:[/] {exc}", highlight=False)
    elif isinstance(exc, ListenError):
        print(f"error: {exc}", file=sys.stderr)
    elif isinstance(exc, DataDirBusyError):
        # plain, on stderr: one line whatever the terminal width
        print(
            f"error: {exc}; stop it first, or give this one a data_dir of its own", file=sys.stderr
        )
    else:
        console().print(f"[red]error:[/] {type(exc).__name__}: {exc}", highlight=False)
        return 1
    return 2
