"""Client ID metadata documents (MCP 2025-11-25, draft-ietf-oauth-client-id-metadata-document):
a client whose `client_id` is an https URL is described by the JSON found there.

Fetching a URL a stranger names is an SSRF surface, so the fetch is narrow: https only, the
host resolved here and every address it resolves to public (no loopback, private,
link-local, multicast or reserved ones) unless the operator names the host, the connection
made to the checked address (no rebinding between check and connect), redirects followed
only on the same host, a timeout, a size cap and a cap on fetches at once. A refusal says
what was wrong in our words; nothing fetched is ever echoed or logged.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from center.db.models import CLIENT_ID
from center.oauth import clients
from center.oauth.errors import OAuthError

MAX_DOCUMENT = 64 * 1024
TIMEOUT = 5.0
MAX_FETCHES = 4
MAX_REDIRECTS = 2
MIN_CACHE, DEFAULT_CACHE, MAX_CACHE = 0, 300, 86400
"""Seconds a document is trusted without fetching again: Cache-Control max-age, clamped."""
MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*\"?(\d{1,10})\"?", re.IGNORECASE)
Resolve = Callable[[str, int], Awaitable[list[str]]]


class DocumentError(Exception):
    """The document could not be used; `reason` is for the log, `message` for the page."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Document:
    """A checked client metadata document and how long it may be trusted."""

    client_id: str
    meta: clients.ClientMetadata
    logo_uri: str | None
    max_age: int


def is_url(client_id: str) -> bool:
    """Whether `client_id` names a metadata document rather than a registered client."""
    return client_id.startswith("https://")


def check_url(url: str) -> str:
    """`url` if it may be a client id: https, a host, a path, no fragment, user info or dots."""
    parts = urlsplit(url)
    if (
        len(url) > CLIENT_ID
        or not url.isprintable()
        or parts.scheme != "https"
        or not parts.hostname
        or "@" in parts.netloc
        or parts.fragment
        or "#" in url
        or parts.path in ("", "/")
        or any(segment in {".", ".."} for segment in parts.path.split("/"))
    ):
        raise DocumentError(
            "bad_client_url",
            f"A client id that is a URL must be https, with a path, at most {CLIENT_ID} "
            "characters, without user info, fragment or dot segments.",
        )
    return url


REFUSED_V6 = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in (
        "64:ff9b:1::/48",  # local-use NAT64 (RFC 8215): translates to the site's own network
        "fec0::/10",  # site-local (deprecated, still routed inside some sites)
    )
)
EMBEDDING_V6 = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
        "64:ff9b::/96",  # NAT64 well-known prefix (RFC 6052)
        "::/96",  # IPv4-compatible (deprecated)
    )
)
"""IPv6 addresses that carry an IPv4 address in their last 32 bits: judged by that one."""


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to (mapped, translated, NAT64, compatible, 6to4)."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in network for network in EMBEDDING_V6):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def public(address: str) -> bool:
    """Whether `address`, and any IPv4 address it embeds, is public unicast."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in REFUSED_V6):
            return False
        ip = embedded_ipv4(ip) or ip
    return ip.is_global and not ip.is_multicast


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the system resolver)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def max_age(cache_control: str) -> int:
    """How long a response may be reused: no-store and no-cache say not at all."""
    lowered = cache_control.lower()
    if "no-store" in lowered or "no-cache" in lowered:
        return MIN_CACHE
    found = MAX_AGE.search(cache_control)
    seconds = int(found.group(1)) if found else DEFAULT_CACHE
    return max(MIN_CACHE, min(MAX_CACHE, seconds))


class Fetcher:
    """Fetches and checks documents (see the module docstring); one per running center."""

    def __init__(
        self,
        allowed_hosts: Sequence[str] = (),
        ca_file: Path | None = None,
        resolver: Resolve = resolve,
        timeout: float = TIMEOUT,
    ) -> None:
        self.allowed = frozenset(host.lower().rstrip(".") for host in allowed_hosts)
        self.verify: ssl.SSLContext = ssl.create_default_context(
            cafile=str(ca_file) if ca_file else None
        )
        self.resolver = resolver
        self.timeout = timeout
        self.slots = asyncio.Semaphore(MAX_FETCHES)

    async def fetch(self, url: str) -> Document:
        """The checked document at `url`; DocumentError for anything wrong."""
        check_url(url)
        try:
            async with asyncio.timeout(self.timeout):
                async with self.slots:
                    body, cache_control = await self._get(url)
        except TimeoutError:
            raise DocumentError("timeout", "The client's metadata came too late.") from None
        return parse(url, body, max_age(cache_control))

    async def _get(self, url: str) -> tuple[bytes, str]:
        host = urlsplit(url).hostname
        async with httpx.AsyncClient(
            verify=self.verify, follow_redirects=False, trust_env=False, timeout=self.timeout
        ) as http:
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._send(http, url)
                if response.status_code not in {301, 302, 303, 307, 308}:
                    return await self._body(response)
                await response.aclose()
                target = urljoin(url, response.headers.get("location", ""))
                if urlsplit(target).hostname != host:
                    raise DocumentError(
                        "cross_host_redirect",
                        "The client's metadata URL redirects to another host, which is refused.",
                    )
                url = check_url(target)
        raise DocumentError("too_many_redirects", "The client's metadata URL redirects too often.")

    async def _send(self, http: httpx.AsyncClient, url: str) -> httpx.Response:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").rstrip("."), parts.port or 443
        address = await self._address(host, port)
        literal = f"[{address}]" if ":" in address else address
        pinned = parts._replace(netloc=f"{literal}:{port}").geturl()
        request = http.build_request(
            "GET",
            pinned,
            headers={"Host": parts.netloc.rpartition("@")[2], "Accept": "application/json"},
            extensions={"sni_hostname": host},
        )
        try:
            return await http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise DocumentError(
                "unreachable", "The client's metadata could not be fetched over https."
            ) from exc

    async def _address(self, host: str, port: int) -> str:
        try:
            addresses = await self.resolver(host, port)
        except (OSError, UnicodeError):
            addresses = []
        if not addresses:
            raise DocumentError("unresolved", "The client's metadata host does not resolve.")
        if host.lower() not in self.allowed and not all(public(a) for a in addresses):
            raise DocumentError(
                "blocked_address",
                "The client's metadata host resolves to a loopback, private, link-local or "
                "multicast address, which is refused.",
            )
        return addresses[0]

    async def _body(self, response: httpx.Response) -> tuple[bytes, str]:
        try:
            if response.status_code != 200:
                raise DocumentError(
                    "bad_status", f"The client's metadata URL answered {response.status_code}."
                )
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_DOCUMENT:
                raise _too_large()
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_DOCUMENT:
                    raise _too_large()
            return bytes(body), response.headers.get("cache-control", "")
        except httpx.HTTPError as exc:
            raise DocumentError(
                "unreachable", "The client's metadata could not be fetched over https."
            ) from exc
        finally:
            await response.aclose()


def _too_large() -> DocumentError:
    return DocumentError(
        "too_large", f"The client's metadata is larger than {MAX_DOCUMENT // 1024} KiB."
    )


def parse(url: str, body: bytes, seconds: int) -> Document:
    """The checked document: JSON, its `client_id` the URL, registrable metadata."""
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise DocumentError("malformed_json", "The client's metadata is not JSON.") from None
    if not isinstance(data, dict) or data.get("client_id") != url:
        raise DocumentError(
            "client_id_mismatch", "The client's metadata does not name its own URL as client_id."
        )
    if "client_secret" in data or "client_secret_expires_at" in data:
        raise DocumentError("has_secret", "A client metadata document may not hold a secret.")
    try:
        meta = clients.parse_metadata({k: v for k, v in data.items() if k != "client_id"})
    except OAuthError as exc:
        message = f"The client's metadata is refused: {exc.reason}."
        raise DocumentError(exc.reason, message) from None
    logo = data.get("logo_uri")
    if logo is not None and not _https(logo):
        raise DocumentError("bad_logo_uri", "The client's logo_uri must be an https URL.")
    return Document(url, meta, logo, seconds)


def _https(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > clients.MAX_URI or not value.isprintable():
        return False
    parts = urlsplit(value)
    return parts.scheme == "https" and bool(parts.hostname) and "@" not in parts.netloc
