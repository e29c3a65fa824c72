"""Node configuration (docs/design.md#configuration): defaults, a YAML file, `SECONDBRAIN_*`.

Everything is validated before the node starts; a bad value stops the process with
one line per problem. Secrets may be given as `env:NAME` or `file:/path`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Self
from urllib.parse import urlsplit

import yaml
from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from vault_core import VAULT_NAME
from vault_node.errors import ConfigError

DEFAULT_CONFIG = Path("/etc/secondbrain/config.yaml")
MIN_RESPONSE_BYTES = 4096
MIN_PACK_BYTES = 1024 * 1024
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_LEVELS = ("debug", "info", "warn", "error")
_NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
STATE_DIR = ".node"
"""The node's own state under `data_dir` unless `state_dir` says otherwise; a dot folder is
never taken for a vault."""


def parse_duration(text: str) -> float:
    """Go `time.ParseDuration` syntax (`30s`, `12h`, `1h30m`) → seconds; ValueError if not."""
    value = text.strip()
    if not value or _DURATION.sub("", value):
        raise ValueError(f"{text!r} is not a duration like 30s, 10m or 12h")
    return sum(float(n) * _UNITS[unit] for n, unit in _DURATION.findall(value))


@dataclasses.dataclass(frozen=True)
class Durations:
    """The duration settings in seconds, parsed once when the config is validated."""

    tool_timeout: float
    revocation_poll: float
    max_stale: float
    heartbeat_interval: float
    trash_retention: float
    vault_scan_interval: float
    lease_margin: float
    replication_timeout: float


DURATIONS = tuple(field.name for field in dataclasses.fields(Durations))


def resolve_secret(value: str) -> str:
    """`env:NAME` → the variable, `file:/path` → the file without trailing newlines."""
    if value.startswith("env:"):
        found = os.environ.get(value[4:], "")
        if not found:
            raise ValueError(f"environment variable {value[4:]} is not set or empty")
        return found
    if value.startswith("file:"):
        try:
            return Path(value[5:]).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise ValueError(f"cannot read {value[5:]}: {exc.strerror}") from exc
    return value


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class NodeConfig(BaseSettings):
    """The settings of one node. Build it with `load_config`."""

    model_config = SettingsConfigDict(env_prefix="SECONDBRAIN_", extra="forbid")

    public_url: str
    listen: str = ":2020"
    data_dir: Path = Path("/data")
    default_vault: str = "default"
    allowed_origins: Annotated[list[str], NoDecode] = []
    max_response_bytes: int = 262_144
    rate_limit: int = 600  # tool calls a minute per principal (docs/design.md#rate-limits)
    tool_timeout: str = "30s"  # a call still reading past it answers `timeout`
    center_url: str = ""
    mcp_url: str = ""  # the deployment's one address; the center's heartbeat answer sets it too
    jwks_file: Path | None = None
    revocation_file: Path | None = None
    issuer: str = ""
    revocation_poll: str = "10s"
    max_stale: str = "120s"
    read_when_stale: bool = False
    state_dir: Path | None = None
    node_id: str = ""
    node_credential: str = Field("", repr=False)
    heartbeat_interval: str = "30s"
    lease_margin: str = "2s"  # a primary stops acknowledging writes this long before its lease ends
    replication_timeout: str = "5s"  # how long a primary waits for a replica to take a commit
    replication_max_bytes: int = 48 * 1024 * 1024  # the largest pack a replica takes in one push
    git: bool = True
    git_remote: str = ""
    git_token: str = ""
    git_author: str = "secondbrain"
    git_email: str = "secondbrain@localhost"
    trash_retention: str = "720h"
    watch: bool = True
    vault_scan_interval: str = "5s"  # a vault folder added to data_dir is served within it
    embedding: str = "bundled"  # the model note_search ranks by meaning with; off: keywords only
    log_level: str = "info"
    commit: str = ""
    metrics: bool = False
    metrics_path: str = "/metrics"
    metrics_key: str = ""
    metrics_listen: str = ""
    _durations: Durations | None = PrivateAttr(default=None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment beats the file (docs/design.md#configuration): file values arrive as
        # init arguments.
        return (env_settings, init_settings)

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _origins_list(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("embedding", mode="before")
    @classmethod
    def _embedding_word(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `off` (and `no`, `false`) as false, and `on` as true.
        if isinstance(value, bool):
            return "bundled" if value else "off"
        return value.strip() if isinstance(value, str) else value

    @field_validator("public_url", "center_url", "issuer", "mcp_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.strip().rstrip("/")

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        return value.strip().lower() if value.strip().lower() in _LEVELS else "info"

    @field_validator("git_token")
    @classmethod
    def _secret(cls, value: str) -> str:
        return resolve_secret(value) if value else value

    @model_validator(mode="after")
    def _check(self) -> NodeConfig:
        problems = [*self._url_problems(), *self._value_problems(), *self._key_problems()]
        problems += self._duration_problems()
        problems += self._heartbeat_problems()
        if self.metrics:
            problems += self._metrics_problems()
        if problems:
            raise ValueError("\n".join(problems))
        if not self.issuer:
            self.issuer = self.center_url
        if self.state_dir is None:
            self.state_dir = self.data_dir / STATE_DIR
        return self

    def _url_problems(self) -> list[str]:
        found = []
        if problem := _url_problem(self.public_url):
            found.append(f"public_url {problem}")
        if self.center_url and (problem := _url_problem(self.center_url)):
            found.append(f"center_url {problem}")
        if self.mcp_url and (problem := _url_problem(self.mcp_url)):
            found.append(f"mcp_url {problem}")
        for origin in self.allowed_origins:
            if origin != "*" and _url_problem(origin):
                found.append(f"allowed_origins entry {origin!r} is not an origin like https://x")
        return found

    def _value_problems(self) -> list[str]:
        found = []
        if not self.listen.strip() or not _listen_ok(self.listen):
            found.append(f"listen {self.listen!r} must be [host]:port, e.g. :2020")
        if not self.data_dir.is_absolute():
            found.append(f"data_dir {str(self.data_dir)!r} must be an absolute path")
        if not VAULT_NAME.fullmatch(self.default_vault):
            found.append(
                f"default_vault {self.default_vault!r} must match ^[a-z0-9][a-z0-9_-]{{0,63}}$"
            )
        if self.rate_limit < 1:
            found.append("rate_limit must be at least 1 call a minute")
        if self.max_response_bytes < MIN_RESPONSE_BYTES:
            found.append(f"max_response_bytes must be at least {MIN_RESPONSE_BYTES}")
        if self.replication_max_bytes < MIN_PACK_BYTES:
            found.append(f"replication_max_bytes must be at least {MIN_PACK_BYTES}")
        if problem := _embedding_problem(self.embedding):
            found.append(problem)
        if self.state_dir is not None and not self.state_dir.is_absolute():
            found.append(f"state_dir {str(self.state_dir)!r} must be an absolute path")
        return found

    def _duration_problems(self) -> list[str]:
        """Each duration must parse and be positive; when all are, `durations` holds them."""
        found, seconds = [], {}
        for name in DURATIONS:
            try:
                seconds[name] = parse_duration(getattr(self, name))
            except ValueError as exc:
                found.append(f"{name}: {exc}")
                continue
            if seconds[name] <= 0:
                found.append(f"{name} must be positive")
        if not found:
            self._durations = Durations(**seconds)
        return found

    def _key_problems(self) -> list[str]:
        found = []
        if not self.center_url and self.jwks_file is None:
            found.append("set center_url (keys fetched from the center) or jwks_file")
        if not self.center_url and self.revocation_file is None:
            found.append("set center_url (revocation feed) or revocation_file")
        if not self.issuer and not self.center_url:
            found.append("set issuer: the `iss` of the center's tokens")
        return found

    def _heartbeat_problems(self) -> list[str]:
        """The heartbeat needs the center, this node's id and its credential, all three;
        the credential (`env:`/`file:`) is resolved here."""
        if not (self.node_id or self.node_credential):
            return []
        found = []
        if not self.center_url:
            found.append("node_id and node_credential need center_url (the heartbeat's target)")
        if not _NODE_ID.fullmatch(self.node_id):
            found.append("node_id must be the id the center registered: 1-64 of A-Z a-z 0-9 - _")
        if not self.node_credential:
            found.append("node_credential is missing: give the one `node add` printed")
            return found
        try:
            self.node_credential = resolve_secret(self.node_credential)
        except ValueError as exc:
            found.append(f"node_credential: {exc}")
        return found

    @property
    def heartbeat(self) -> bool:
        """Whether this node reports to the center (a validated config has all three)."""
        return bool(self.center_url and self.node_id and self.node_credential)

    def _metrics_problems(self) -> list[str]:
        """Only checked when the endpoint is on (docs/design.md#metrics); resolves the key."""
        found = []
        path = self.metrics_path
        if not path.startswith("/") or path in ("/", "/mcp", "/healthz"):
            found.append(f"metrics_path {path!r} must start with / and not be /, /mcp or /healthz")
        if self.metrics_listen and not _listen_ok(self.metrics_listen):
            found.append(f"metrics_listen {self.metrics_listen!r} must be [host]:port, e.g. :9090")
        try:
            self.metrics_key = resolve_secret(self.metrics_key) if self.metrics_key else ""
        except ValueError as exc:
            return [*found, f"metrics_key: {exc}"]
        if self.metrics_key and len(self.metrics_key) < 16:
            found.append("metrics_key must be at least 16 characters")
        return found

    def metrics_summary(self) -> str:
        """One line for `secondbrain validate`: where the endpoint is, whether a key is needed."""
        if not self.metrics:
            return "metrics: off"
        where = self.metrics_listen or "the main listener"
        key = "key required" if self.metrics_key else "no key"
        return f"metrics: {self.metrics_path} on {where}, {key}"

    def heartbeat_summary(self) -> str:
        """One line for `secondbrain validate`: whether and where the node reports itself."""
        if not self.node_id:
            return "heartbeat: off (no node_id; the center will not list this node's vaults)"
        return (
            f"heartbeat: node {self.node_id} to {self.center_url} every "
            f"{self.heartbeat_interval}, credential set"
        )

    @property
    def resource(self) -> str:
        """This node's MCP endpoint as tokens name it in `aud`."""
        return f"{self.public_url}/mcp"

    @property
    def metadata_url(self) -> str:
        return f"{self.public_url}/.well-known/oauth-protected-resource"

    @property
    def durations(self) -> Durations:
        """The duration settings in seconds (`durations.max_stale`), parsed at load."""
        assert self._durations is not None, "a validated config has its durations"
        return self._durations

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy whose `durations` follow the durations `update` may set (a reload keeps
        `revocation_poll` at its running value this way)."""
        copied = super().model_copy(update=update, deep=deep)
        copied._durations = Durations(
            **{name: parse_duration(getattr(copied, name)) for name in DURATIONS}
        )
        return copied

    def host_port(self, listen: str | None = None) -> tuple[str, int]:
        host, _, port = (listen or self.listen).rpartition(":")
        return (host.strip("[]") or "0.0.0.0"), int(port)  # noqa: S104 — spec default `:2020`


def _url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"{url!r} must be an absolute http or https URL"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return f"{url!r} must not have a query or fragment"
    return None


def _listen_ok(listen: str) -> bool:
    _, sep, port = listen.rpartition(":")
    return bool(sep) and port.isdigit() and 0 <= int(port) <= 65535


def load_config(path: Path | None = None, **overrides: Any) -> NodeConfig:
    """Read the YAML file (a missing file is no error), apply the environment, validate."""
    source = path or Path(os.environ.get("SECONDBRAIN_CONFIG", "") or DEFAULT_CONFIG)
    values = {**_read_yaml(source, explicit=path is not None), **overrides}
    try:
        return NodeConfig(**values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from exc


@dataclasses.dataclass(frozen=True)
class Sources:
    """Which settings the file gave and which the environment (which wins:
    docs/design.md#configuration)."""

    file: Path
    from_file: tuple[str, ...]
    from_env: tuple[str, ...]
    overridden: tuple[str, ...]
    """Set in both with different values: the file's is ignored, easily by mistake (an
    exported `SECONDBRAIN_CENTER_URL` meant for the center's CLI)."""

    def lines(self) -> list[str]:
        """For `secondbrain validate`: names only, never a value (some are secrets)."""
        env = ", ".join(f"{name} ({_env_name(name)})" for name in self.from_env)
        return [
            f"from {self.file}: {', '.join(self.from_file) or 'nothing'}",
            f"from the environment: {env or 'nothing'}",
            "the rest: defaults",
        ]

    def conflicts(self) -> list[str]:
        return [
            f"{_env_name(name)} overrides {name} from {self.file} with another value;"
            f" unset it (or make the two agree)"
            for name in self.overridden
        ]


def setting_sources(path: Path | None = None) -> Sources:
    """Where each setting `load_config(path)` reads comes from."""
    source = path or Path(os.environ.get("SECONDBRAIN_CONFIG", "") or DEFAULT_CONFIG)
    file = _read_yaml(source, explicit=path is not None)
    env = {
        name: os.environ[_env_name(name)]
        for name in NodeConfig.model_fields
        if _env_name(name) in os.environ
    }
    overridden = [name for name in env if name in file and not _same(file[name], env[name])]
    return Sources(
        source,
        tuple(name for name in NodeConfig.model_fields if name in file),
        tuple(env),
        tuple(overridden),
    )


def _env_name(setting: str) -> str:
    return f"SECONDBRAIN_{setting.upper()}"


def _same(file_value: object, env_value: str) -> bool:
    """Whether the file and the environment say the same, as the settings would read it."""
    if isinstance(file_value, bool):
        return file_value == (env_value.strip().lower() in ("1", "true", "yes", "on"))
    if isinstance(file_value, list):
        return ",".join(str(item).strip() for item in file_value) == ",".join(
            item.strip() for item in env_value.split(",") if item.strip()
        )
    return str(file_value).strip().rstrip("/") == env_value.strip().rstrip("/")


UP_CONFIG = Path("data") / "node.yaml"
"""What `secondbrain up` (and so `make run`) writes, relative to the folder it starts in."""


def configured_data_dir(path: Path | None = None) -> tuple[Path, Path] | None:
    """Where the configured node looks for vaults, and the file that says so: `path`,
    else $SECONDBRAIN_CONFIG or /etc/secondbrain/config.yaml, else the `node.yaml` that
    `secondbrain up` writes under ./data. None when no file names a data_dir."""
    candidates = [path] if path else []
    if not path:
        candidates += [Path(os.environ.get("SECONDBRAIN_CONFIG", "") or DEFAULT_CONFIG), UP_CONFIG]
    for source in candidates:
        data_dir = _read_yaml(source, explicit=path is not None).get("data_dir")
        if isinstance(data_dir, str) and data_dir:
            return Path(data_dir), source
    return None


def _read_yaml(path: Path, *, explicit: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if explicit:
            raise ConfigError([f"config file {path} does not exist"]) from exc
        return {}
    except OSError as exc:
        raise ConfigError([f"config file {path}: {exc.strerror}"]) from exc
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"config file {path} is not valid YAML: {exc}"]) from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError([f"config file {path} must be a mapping of setting: value"])
    return {str(key): value for key, value in loaded.items()}


def _describe(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown setting" + _did_you_mean(where) + "; see docs/node.md"
        elif error["type"] == "string_type" and isinstance(error["input"], bool):
            message = (
                f"YAML read {str(error['input']).lower()} (from yes/no/on/off) where a word is"
                ' wanted; write the word in quotes, e.g. "off"'
            )
        elif error["type"] == "string_type" and isinstance(error["input"], int | float):
            message = _quote_it(where, error["input"])
        problems += [f"{where}: {line}" if where else line for line in message.split("\n")]
    return problems


def _did_you_mean(name: str) -> str:
    close = difflib.get_close_matches(name.lower(), list(NodeConfig.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _quote_it(name: str, value: object) -> str:
    """YAML reads a bare 3038 as a number where a text is wanted: say how to write it."""
    if name.endswith("listen"):
        return (
            f'YAML read {value} as a number; write "host:port" in quotes, e.g. "127.0.0.1:{value}"'
        )
    return f'YAML read {value} as a number; write it in quotes, e.g. "{value}"'


def _embedding_problem(spec: str) -> str | None:
    if spec in ("bundled", "off"):
        return None
    if spec.startswith("onnx:"):
        path = Path(spec.removeprefix("onnx:")).expanduser()
        if not path.is_dir() and not (path.is_file() and path.suffix == ".onnx"):
            return (
                f"embedding {spec!r}: no such folder or .onnx file; give the folder of an ONNX"
                " model (or the .onnx file in it)"
            )
        return None
    return f"embedding {spec!r} must be bundled, off or onnx:/path/to/model-folder"
