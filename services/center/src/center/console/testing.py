"""Helpers for tests that drive the console the way a browser does: a cookie jar per
browser, the CSRF token of the page last shown, and form posts that follow nothing.

For tests only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import httpx

from center import testing as t
from center.oauth.testing import PASSWORD

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SENT_TO_SIGN_IN = (303, "/console/sign-in")
"""What a signed-in page answers a browser whose session has ended (or never began)."""


def redirect(response: httpx.Response) -> tuple[int, str | None]:
    """An answer's status and where it sends the browser (None: nowhere)."""
    return response.status_code, response.headers.get("location")


@dataclass
class Browser:
    """One browser: its own cookies, and the form token of the last page it loaded."""

    http: httpx.AsyncClient
    csrf: str = ""
    last: httpx.Response | None = field(default=None, repr=False)

    async def get(self, path: str, **params: str) -> httpx.Response:
        response = await self.http.get(path, params=params or None)
        self._remember(response)
        return response

    async def post(self, path: str, csrf: str | None = None, **form: str) -> httpx.Response:
        """Post `form` with the last page's token (or `csrf`); the answer, unfollowed."""
        body = {"csrf": self.csrf if csrf is None else csrf, **form}
        response = await self.http.post(path, data=body)
        self._remember(response)
        return response

    def _remember(self, response: httpx.Response) -> None:
        self.last = response
        found = CSRF.search(response.text)
        if found:
            self.csrf = found.group(1)

    async def sign_in(self, username: str = "alice", password: str = PASSWORD) -> httpx.Response:
        await self.get("/console/sign-in")
        return await self.post("/console/sign-in", username=username, password=password)

    async def sign_in_operator(self, token: str = t.ADMIN_TOKEN) -> httpx.Response:
        await self.get("/console/sign-in")
        return await self.post("/console/sign-in/operator", admin_token=token)
