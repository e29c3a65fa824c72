"""Settings: read from SECONDBRAIN_CENTER_* only, validated, and never echoing a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from center import testing as t
from center.config import Settings, check_public_url, load_settings
from center.errors import ConfigError

BAD_SECRET = "not-a-secret-but-a-TELLTALE-value"


def test_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SECONDBRAIN_CENTER_SECRET", t.SECRET)
    monkeypatch.setenv("SECONDBRAIN_CENTER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SECONDBRAIN_CENTER_ISSUER", "https://center.example.com/")
    monkeypatch.setenv("SECONDBRAIN_CENTER_PORT", "9191")
    settings = load_settings()
    assert settings.data_dir == tmp_path
    assert settings.issuer == "https://center.example.com"
    assert settings.port == 9191
    assert settings.admin_token is None


def test_the_default_database_is_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = t.settings(tmp_path)
    assert settings.backend == "sqlite"
    assert settings.url == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'center.db'}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("sqlite:////tmp/x.db", "sqlite+aiosqlite:////tmp/x.db"),
    ],
)
def test_database_urls_are_normalized_to_the_async_drivers(
    tmp_path: Path, given: str, expected: str
) -> None:
    assert t.settings(tmp_path, database_url=given).url == expected


def test_an_unknown_database_driver_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="SECONDBRAIN_CENTER_DATABASE_URL"):
        load_settings(data_dir=tmp_path, secret=t.SECRET, database_url="mysql://u@h/db")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("127.0.0.1,::1", "127.0.0.1,::1"),
        (" 10.213.27.0/24 , 0:0:0:0:0:0:0:1 ", "10.213.27.0/24,::1"),
        ("", ""),
    ],
)
def test_trusted_proxies_are_addresses_and_networks_in_normal_form(
    tmp_path: Path, given: str, expected: str
) -> None:
    assert t.settings(tmp_path, trusted_proxies=given).trusted_proxies == expected


@pytest.mark.parametrize("given", ["*", "proxy.internal", "10.213.27.1/24", "127.0.0.1;10.0.0.1"])
def test_a_wildcard_a_host_name_or_a_bad_network_is_no_trusted_proxy(
    tmp_path: Path, given: str
) -> None:
    with pytest.raises(ConfigError, match="SECONDBRAIN_CENTER_TRUSTED_PROXIES") as caught:
        load_settings(data_dir=tmp_path, secret=t.SECRET, trusted_proxies=given)
    assert given not in caught.value.message


def test_a_schema_is_only_accepted_for_postgresql(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="PostgreSQL only"):
        load_settings(data_dir=tmp_path, secret=t.SECRET, database_schema="center")


def test_a_bad_secret_is_refused_without_showing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(data_dir=tmp_path, secret=BAD_SECRET)
    assert "SECONDBRAIN_CENTER_SECRET" in caught.value.message
    assert "32 bytes" in caught.value.message
    assert "TELLTALE" not in caught.value.message
    assert "TELLTALE" not in str(caught.value)


def test_a_missing_secret_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SECONDBRAIN_CENTER_SECRET", raising=False)
    with pytest.raises(ConfigError, match="SECONDBRAIN_CENTER_SECRET: Field required"):
        load_settings(data_dir=tmp_path)


def test_a_short_admin_token_is_refused_without_showing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(data_dir=tmp_path, secret=t.SECRET, admin_token="TELLTALE-short")
    assert "SECONDBRAIN_CENTER_ADMIN_TOKEN" in caught.value.message
    assert "TELLTALE" not in caught.value.message


def test_the_admin_token_must_differ_from_the_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="different"):
        load_settings(data_dir=tmp_path, secret=t.SECRET, admin_token=t.SECRET)


def test_secrets_do_not_show_in_the_settings_repr(tmp_path: Path) -> None:
    settings = t.settings(tmp_path)
    assert t.SECRET not in repr(settings)
    assert t.ADMIN_TOKEN not in repr(settings)
    assert settings.signing_key().kid in repr(settings.signing_key())


def test_no_dotenv_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SECONDBRAIN_CENTER_SECRET", raising=False)
    (tmp_path / ".env").write_text(f"SECONDBRAIN_CENTER_SECRET={t.SECRET}\n")
    with pytest.raises(ConfigError, match="SECONDBRAIN_CENTER_SECRET"):
        load_settings(data_dir=tmp_path)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://center.example.com",
        "http://center.example.com",
        "https://user:pw@center.example.com",
        "https://center.example.com/?q=1",
        "https://center.example.com/#f",
        "center.example.com",
    ],
)
def test_public_urls_must_be_https_or_loopback_http(url: str) -> None:
    with pytest.raises(ValueError, match=r"must|only"):
        check_public_url(url)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:2021", "http://localhost:2021", "http://[::1]:2021/", "https://c.io"]
)
def test_loopback_http_and_https_are_public_urls(url: str) -> None:
    assert check_public_url(url) == url.rstrip("/")


def test_unknown_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="SECRETT: Extra inputs"):
        load_settings(data_dir=tmp_path, secret=t.SECRET, secrett="x")


def test_every_setting_has_a_description() -> None:
    assert all(field.description for field in Settings.model_fields.values())


def test_every_setting_is_documented() -> None:
    guide = (Path(__file__).parents[3] / "docs" / "center.md").read_text()
    names = [f"SECONDBRAIN_CENTER_{name.upper()}" for name in Settings.model_fields]
    missing = [n for n in names if n not in guide and n.rsplit("_", 1)[-1] not in ("HOST", "PORT")]
    assert missing == []
    assert "SECONDBRAIN_CENTER_HOST` / `_PORT" in guide
