"""Verification mails: localized templates, and real SMTP over STARTTLS or implicit TLS
against a local aiosmtpd server whose certificate comes from a throw-away CA — an
untrusted certificate, a refusing server or no server at all is a MailError (503)
whose message and log line hold neither the address nor the code."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from center import testing as t
from center.config import Settings
from center.errors import ConfigError, MailError
from center.log import configure_logging
from center.mail import LOCALES, TEMPLATES, Mail, Mailer, Templates, pick_locale

ADDRESS = "ada@example.org"
CODE = "c0de-" + "x" * 38
Start = Callable[..., Any]


@pytest.fixture(autouse=True)
def live_stdout() -> None:
    """Log to this test's stdout: a logger left bound to an earlier test's closed one
    would fail the Mailer's log line."""
    configure_logging("info")


@pytest.fixture
def logs(live_stdout: None) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    yield stream
    configure_logging("info")


def smtp_settings(tmp_path: Path, server: Any, ca_file: Path, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "registration": "email",
        "smtp_host": "127.0.0.1",
        "smtp_port": server.port,
        "smtp_tls": server.tls,
        "smtp_from": "Secondbrain <noreply@center.test>",
        "smtp_ca_file": ca_file,
    }
    return t.settings(tmp_path / "center", **{**values, **extra})


def verification(locale: str = "en") -> Mail:
    values = {"code": CODE, "minutes": 15, "center": t.ISSUER}
    return Templates().render("verify", ADDRESS, locale, **values)


# ---------------------------------------------------------------- languages


@pytest.mark.parametrize(
    ("tag", "language"),
    [
        (None, "en"),
        ("", "en"),
        ("de", "de"),
        ("de-AT", "de"),
        ("DE_ch", "de"),
        ("fr-CA", "fr"),
        ("es-419", "es"),
        ("en-GB", "en"),
        ("ja", "en"),
        ("zh-Hant-TW", "en"),
        ("klingon-x-1", "en"),
        ("de\r\nBcc: x@y.z", "en"),
        ("../../etc/passwd", "en"),
        ("d" * 40, "en"),
    ],
)
def test_a_language_tag_falls_back_to_its_base_language_then_english(
    tag: str | None, language: str
) -> None:
    assert pick_locale(tag) == language


def test_every_language_has_a_subject_and_a_body_that_render() -> None:
    for locale in LOCALES:
        for part in ("subject", "body"):
            assert (TEMPLATES / f"verify.{locale}.{part}.txt").is_file(), (locale, part)
        mail = verification(locale)
        assert mail.locale == locale
        assert CODE in mail.body
        assert "15" in mail.body
        assert "\n" not in mail.subject


def test_english_and_german_mails_differ_in_language_not_in_code() -> None:
    english, german = verification("en"), verification("de-AT")
    assert english.subject == "Your secondbrain verification code"
    assert german.subject == "Ihr secondbrain-Bestätigungscode"
    assert "expires in 15 minutes" in english.body
    assert "läuft in 15 Minuten ab" in german.body
    assert f"{t.ISSUER}/v1/accounts/verify" in german.body


# ---------------------------------------------------------------- delivery


@pytest.mark.asyncio
@pytest.mark.parametrize("tls", ["starttls", "tls"])
async def test_a_mail_is_delivered_over_tls(
    tls: str, smtp_servers: Start, pki: Any, tmp_path: Path
) -> None:
    server = smtp_servers(tls)
    mailer = Mailer(smtp_settings(tmp_path, server, pki.ca_file))
    await mailer.send(verification("de"), now=t.START)
    assert server.secured == [True]
    [message] = server.messages
    assert message["To"] == ADDRESS
    assert message["From"] == "Secondbrain <noreply@center.test>"
    assert message["Subject"] == "Ihr secondbrain-Bestätigungscode"
    assert message["Content-Language"] == "de"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Date"].datetime.timestamp() == t.START
    assert CODE in message.get_content()


@pytest.mark.asyncio
async def test_a_login_uses_the_password_from_its_file(smtp: Any, pki: Any, tmp_path: Path) -> None:
    secret = tmp_path / "smtp-password"
    secret.write_text("test-only smtp password\n")
    settings = smtp_settings(
        tmp_path, smtp, pki.ca_file, smtp_username="center", smtp_password_file=secret
    )
    await Mailer(settings).send(verification(), now=t.START)
    assert smtp.logins == ["center"]
    assert len(smtp.messages) == 1


@pytest.mark.asyncio
async def test_a_wrong_smtp_password_is_a_mail_error(smtp: Any, pki: Any, tmp_path: Path) -> None:
    settings = smtp_settings(
        tmp_path, smtp, pki.ca_file, smtp_username="center", smtp_password="not the password"
    )
    with pytest.raises(MailError):
        await Mailer(settings).send(verification(), now=t.START)
    assert smtp.messages == []


@pytest.mark.asyncio
@pytest.mark.parametrize("tls", ["starttls", "tls"])
async def test_an_untrusted_certificate_is_refused(
    tls: str, smtp_servers: Start, pki: Any, tmp_path: Path, logs: io.StringIO
) -> None:
    server = smtp_servers(tls, trusted=False)
    with pytest.raises(MailError) as refused:
        await Mailer(smtp_settings(tmp_path, server, pki.ca_file)).send(verification(), t.START)
    assert refused.value.status == 503
    assert "SSLCertVerificationError" in refused.value.message
    assert server.messages == []
    assert ADDRESS not in logs.getvalue()
    assert CODE not in logs.getvalue()


@pytest.mark.asyncio
async def test_the_system_trust_store_does_not_know_the_test_ca(
    smtp: Any, pki: Any, tmp_path: Path
) -> None:
    settings = smtp_settings(tmp_path, smtp, pki.ca_file, smtp_ca_file=None)
    with pytest.raises(MailError):
        await Mailer(settings).send(verification(), now=t.START)
    assert smtp.messages == []


@pytest.mark.asyncio
async def test_a_refusing_server_is_a_mail_error_without_the_address(
    smtp: Any, pki: Any, tmp_path: Path, logs: io.StringIO
) -> None:
    smtp.refuse = True
    with pytest.raises(MailError) as refused:
        await Mailer(smtp_settings(tmp_path, smtp, pki.ca_file)).send(verification(), t.START)
    assert "SMTPDataError" in refused.value.message
    for text in (refused.value.message, logs.getvalue()):
        assert ADDRESS not in text
        assert CODE not in text
    assert '"mail.failed"' in logs.getvalue()


@pytest.mark.asyncio
async def test_no_server_at_all_is_a_mail_error(smtp: Any, pki: Any, tmp_path: Path) -> None:
    settings = smtp_settings(tmp_path, smtp, pki.ca_file)
    closed = settings.model_copy(update={"smtp_port": 1})
    with pytest.raises(MailError):
        await Mailer(closed).send(verification(), now=t.START)


@pytest.mark.asyncio
async def test_a_server_without_starttls_is_refused(pki: Any, tmp_path: Path) -> None:
    from aiosmtpd.controller import Controller  # noqa: PLC0415 - a plain server, only here

    class Plain:
        received = 0

        async def handle_DATA(self, *_: Any) -> str:
            Plain.received += 1
            return "250 OK"

    controller = Controller(Plain(), hostname="127.0.0.1", port=_port())
    controller.start()
    try:
        server = SimpleNamespace(port=controller.port, tls="starttls")
        with pytest.raises(MailError) as refused:
            await Mailer(smtp_settings(tmp_path, server, pki.ca_file)).send(verification(), 0)
    finally:
        controller.stop()
    assert "SMTPNotSupportedError" in refused.value.message
    assert Plain.received == 0


def _port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"registration": "email"}, "needs smtp_host and smtp_from"),
        (
            {"smtp_host": "mail.test", "smtp_from": "x@y.test", "smtp_password": "p"},
            "needs smtp_username",
        ),
        ({"smtp_host": "mail.test\r\nX", "smtp_from": "a@b.test"}, "host name"),
        ({"smtp_host": "mail.test", "smtp_from": "not an address"}, "smtp_from"),
        ({"smtp_host": "mail.test", "smtp_from": "a@b.test\r\nBcc: c@d.test"}, "smtp_from"),
        ({"smtp_ca_file": "missing.pem"}, "not a readable file"),
        ({"account_role": "reader", "account_scope": "allow_all"}, "exceeds the cap"),
        ({"account_scope": "everything"}, "unknown role or scope"),
        ({"smtp_tls": "none"}, "SECONDBRAIN_CENTER_SMTP_TLS"),
    ],
)
def test_bad_mail_settings_refuse_to_start(
    extra: dict[str, Any], problem: str, tmp_path: Path
) -> None:
    from center.config import load_settings  # noqa: PLC0415

    with pytest.raises(ConfigError) as refused:
        load_settings(data_dir=tmp_path, secret=t.SECRET, **extra)
    assert problem in refused.value.message
    assert "\r\nX" not in refused.value.message


def test_the_smtp_password_comes_from_the_environment_and_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECONDBRAIN_CENTER_SMTP_PASSWORD", "env-only smtp secret")
    settings = t.settings(
        tmp_path, smtp_host="mail.test", smtp_from="a@b.test", smtp_username="center"
    )
    assert settings.smtp_secret() == "env-only smtp secret"
    assert "env-only smtp secret" not in repr(settings)
