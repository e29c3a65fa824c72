"""Verification mails: rendered per language from jinja2 templates, sent over real SMTP.

TLS is never optional: STARTTLS (refused if the server does not offer it) or implicit
TLS, with the certificate and host name checked against the system's CAs or
`smtp_ca_file`. smtplib runs in a worker thread, one connection per mail. A failure of
any kind is MailError (503) naming only the failure's class — never the address, the
code or the server's reply, which may quote either.
"""

from __future__ import annotations

import asyncio
import re
import smtplib
import ssl
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from pathlib import Path

import jinja2

from center.config import Settings
from center.errors import MailError
from center.log import get_logger

LOCALES = ("en", "de", "fr", "es")
"""Languages a verification mail is written in; English is the fallback."""
TEMPLATES = Path(__file__).resolve().parent / "templates" / "mail"
_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8}){0,4}")


def pick_locale(tag: str | None) -> str:
    """The mail language for a BCP 47 tag: its base language if we write it (`de-AT` →
    `de`), otherwise English — a missing, malformed or unknown tag never fails."""
    if not tag or not _TAG.fullmatch(tag):
        return "en"
    base = re.split(r"[-_]", tag, maxsplit=1)[0].lower()
    return base if base in LOCALES else "en"


@dataclass(frozen=True)
class Mail:
    """One rendered mail to one address."""

    to: str
    subject: str
    body: str
    locale: str


class Templates:
    """`<name>.<locale>.subject.txt` and `<name>.<locale>.body.txt` under TEMPLATES."""

    def __init__(self, folder: Path = TEMPLATES) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folder),
            undefined=jinja2.StrictUndefined,
            autoescape=False,  # noqa: S701 - plain-text mail, nothing is HTML
            keep_trailing_newline=True,
        )

    def render(self, name: str, to: str, locale: str, **values: object) -> Mail:
        language = pick_locale(locale)
        subject = self.env.get_template(f"{name}.{language}.subject.txt").render(**values)
        body = self.env.get_template(f"{name}.{language}.body.txt").render(**values)
        return Mail(to=to, subject=" ".join(subject.split()), body=body, locale=language)


class Mailer:
    """Sends mails through the configured SMTP server."""

    def __init__(self, settings: Settings) -> None:
        if settings.smtp_host is None or settings.smtp_from is None:
            raise MailError("no smtp_host or smtp_from is configured")
        self.settings = settings
        self.host = settings.smtp_host
        self.sender = settings.smtp_from

    def tls(self) -> ssl.SSLContext:
        """Certificate and host name checks on, TLS 1.2 at least."""
        ca_file = self.settings.smtp_ca_file
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def message(self, mail: Mail, now: float) -> EmailMessage:
        message = EmailMessage(policy=policy.SMTP)
        message["From"] = self.sender
        message["To"] = mail.to
        message["Subject"] = mail.subject
        message["Date"] = formatdate(now, usegmt=True)
        message["Message-ID"] = make_msgid(domain=parseaddr(self.sender)[1].rpartition("@")[2])
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(mail.body)
        message["Content-Language"] = mail.locale  # after set_content, which drops Content-*
        return message

    async def send(self, mail: Mail, now: float) -> None:
        """Deliver `mail`, or raise MailError having sent nothing the caller can rely on."""
        message = self.message(mail, now)
        try:
            await asyncio.to_thread(self._deliver, message)
        except (smtplib.SMTPException, OSError, ValueError) as exc:
            get_logger().warning("mail.failed", error=type(exc).__name__, host=self.host)
            raise MailError(type(exc).__name__) from None
        get_logger().info("mail.sent", locale=mail.locale)

    def _deliver(self, message: EmailMessage) -> None:
        port, timeout = self.settings.smtp_port, self.settings.smtp_timeout
        if self.settings.smtp_tls == "tls":
            with smtplib.SMTP_SSL(self.host, port, timeout=timeout, context=self.tls()) as smtp:
                self._submit(smtp, message)
            return
        with smtplib.SMTP(self.host, port, timeout=timeout) as smtp:
            smtp.ehlo()
            smtp.starttls(context=self.tls())
            smtp.ehlo()
            self._submit(smtp, message)

    def _submit(self, smtp: smtplib.SMTP, message: EmailMessage) -> None:
        if self.settings.smtp_username:
            smtp.login(self.settings.smtp_username, self.settings.smtp_secret() or "")
        smtp.send_message(message)
