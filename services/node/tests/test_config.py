"""Configuration (docs/design.md#configuration): defaults, YAML file, environment on top, secrets,
validation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault_node.config import DURATIONS, Durations, NodeConfig, load_config, parse_duration
from vault_node.errors import ConfigError

BASE = (
    "public_url: https://node.example.com\n"
    "data_dir: /srv/vaults\n"
    "center_url: https://center.example.com\n"
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SECONDBRAIN_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value.problems


def test_a_minimal_file_gets_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, BASE))
    assert config.resource == "https://node.example.com/mcp"
    assert config.metadata_url == "https://node.example.com/.well-known/oauth-protected-resource"
    assert (config.listen, config.default_vault, config.max_response_bytes) == (
        ":2020",
        "default",
        262144,
    )
    assert config.issuer == "https://center.example.com"
    assert config.allowed_origins == []
    assert config.durations.trash_retention == 720 * 3600
    assert config.durations.tool_timeout == 30
    assert config.host_port() == ("0.0.0.0", 2020)


def test_the_environment_beats_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECONDBRAIN_MAX_RESPONSE_BYTES", "8192")
    monkeypatch.setenv("SECONDBRAIN_ALLOWED_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("SECONDBRAIN_LISTEN", "127.0.0.1:9999")
    config = load_config(write(tmp_path, BASE + "max_response_bytes: 5000\n"))
    assert config.max_response_bytes == 8192
    assert config.allowed_origins == ["https://a.example", "https://b.example"]
    assert config.host_port() == ("127.0.0.1", 9999)


def test_the_file_named_by_the_environment_is_read_and_a_missing_one_is_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECONDBRAIN_CONFIG", str(write(tmp_path, BASE + "default_vault: team\n")))
    assert load_config().default_vault == "team"
    monkeypatch.setenv("SECONDBRAIN_CONFIG", str(tmp_path / "missing.yaml"))
    monkeypatch.setenv("SECONDBRAIN_PUBLIC_URL", "https://n.example")
    monkeypatch.setenv("SECONDBRAIN_CENTER_URL", "https://c.example")
    assert load_config().resource == "https://n.example/mcp"


def test_a_config_file_named_on_the_command_line_must_exist(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yaml") == [
        f"config file {tmp_path / 'nope.yaml'} does not exist"
    ]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("public_url: node.example.com\n", "public_url 'node.example.com' must be an absolute"),
        ("public_url: ftp://node.example.com\n", "must be an absolute http or https URL"),
        ("public_url: https://n.example/?x=1\n", "must not have a query or fragment"),
        ("listen: ''\n", "listen '' must be [host]:port"),
        ("listen: 'localhost'\n", "listen 'localhost' must be [host]:port"),
        ("data_dir: relative/path\n", "data_dir 'relative/path' must be an absolute path"),
        ("default_vault: My Vault\n", "default_vault 'My Vault' must match"),
        ("max_response_bytes: 100\n", "max_response_bytes must be at least 4096"),
        ("trash_retention: forever\n", "trash_retention: 'forever' is not a duration"),
        ("max_stale: 0s\n", "max_stale must be positive"),
        ("tool_timeout: 0s\n", "tool_timeout must be positive"),
        ("tool_timeout: soon\n", "tool_timeout: 'soon' is not a duration"),
        ("allowed_origins: [not-an-origin]\n", "allowed_origins entry 'not-an-origin'"),
        ("tokn_ttl: 1h\n", "tokn_ttl: unknown setting"),
        ("git_token: env:SECONDBRAIN_TEST_UNSET\n", "SECONDBRAIN_TEST_UNSET is not set"),
        ("git_token: file:/nonexistent/token\n", "cannot read /nonexistent/token"),
    ],
)
def test_each_bad_value_stops_the_start_with_a_clear_line(
    tmp_path: Path, extra: str, fragment: str
) -> None:
    found = problems(write(tmp_path, BASE + extra))
    assert any(fragment in line for line in found), found


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    found = problems(write(tmp_path, "public_url: x\ndata_dir: rel\nmax_response_bytes: 1\n"))
    text = "\n".join(found)
    for fragment in ("public_url", "data_dir", "max_response_bytes", "center_url", "issuer"):
        assert fragment in text


def test_keys_and_revocations_need_a_source(tmp_path: Path) -> None:
    text = "\n".join(problems(write(tmp_path, "public_url: https://n.example\n")))
    assert "set center_url (keys fetched from the center) or jwks_file" in text
    assert "set center_url (revocation feed) or revocation_file" in text
    offline = write(
        tmp_path,
        "public_url: https://n.example\njwks_file: /k.json\nrevocation_file: /r.jws\n"
        "issuer: https://c.example\n",
    )
    assert load_config(offline).issuer == "https://c.example"


def test_secrets_resolve_from_the_environment_and_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUSH_TOKEN", "from-env")
    assert (
        load_config(write(tmp_path, BASE + "git_token: env:PUSH_TOKEN\n")).git_token == "from-env"
    )
    secret = tmp_path / "token.txt"
    secret.write_text("from-file\r\n")
    found = load_config(write(tmp_path, BASE + f"git_token: file:{secret}\n"))
    assert found.git_token == "from-file"


def test_an_unknown_log_level_means_info(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, BASE + "log_level: LOUD\n")).log_level == "info"


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("12h", 43200), ("1h30m", 5400), ("250ms", 0.25)]
)
def test_durations_read_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_every_duration_setting_is_in_seconds_on_the_loaded_config(tmp_path: Path) -> None:
    text = "tool_timeout: 250ms\nmax_stale: 1h30m\nheartbeat_interval: 2m\n"
    config = load_config(write(tmp_path, BASE + text))
    assert config.durations == Durations(
        tool_timeout=0.25,
        revocation_poll=10,
        max_stale=5400,
        heartbeat_interval=120,
        trash_retention=720 * 3600,
        vault_scan_interval=5,
        lease_margin=2,
        replication_timeout=5,
    )
    assert set(DURATIONS) <= set(NodeConfig.model_fields)


def test_a_copy_with_a_duration_changed_has_it_in_seconds(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, BASE))
    copied = config.model_copy(update={"revocation_poll": "1m"})
    assert copied.durations.revocation_poll == 60
    assert config.durations.revocation_poll == 10


def test_yaml_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    assert "must be a mapping" in problems(write(tmp_path, "- a\n- b\n"))[0]
    assert "not valid YAML" in problems(write(tmp_path, "a: [\n"))[0]


@pytest.mark.parametrize(
    ("written", "meant"),
    [("off", "off"), ("false", "off"), ("on", "bundled"), ("bundled", "bundled")],
)
def test_embedding_off_written_bare_in_yaml_means_off(
    tmp_path: Path, written: str, meant: str
) -> None:
    config = load_config(write(tmp_path, BASE + f"embedding: {written}\n"))
    assert config.embedding == meant


def test_embedding_onnx_takes_a_model_folder_or_an_onnx_file_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "e5-small"
    (folder / "onnx").mkdir(parents=True)
    (folder / "onnx" / "model_quantized.onnx").write_bytes(b"")
    for spec in (f"onnx:{folder}", f"onnx:{folder / 'onnx' / 'model_quantized.onnx'}"):
        config = load_config(write(tmp_path, BASE + f"embedding: {spec}\n"))
        assert config.embedding == spec
    (folder / "onnx" / "notes.txt").write_text("not a model")
    for spec in (f"onnx:{tmp_path / 'missing'}", f"onnx:{folder / 'onnx' / 'notes.txt'}"):
        assert (
            "no such folder or .onnx file"
            in problems(write(tmp_path, BASE + f"embedding: {spec}\n"))[0]
        )
