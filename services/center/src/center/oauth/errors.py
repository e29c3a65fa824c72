"""OAuth errors (RFC 6749 §5.2, RFC 8707 `invalid_target`, RFC 7591 §3.2.2).

`error` and `description` go to the client; `reason` is a machine-readable word for the
`token_failed` log line, which is the only way to debug a refusal that happens between a
browser and a client's backend. None of them ever holds a token, code or password.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class OAuthError(Exception):
    """A refusal in the shape of RFC 6749 §5.2."""

    def __init__(self, error: str, reason: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.reason = reason
        self.description = description
        self.status = status

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        body = {"error": self.error, "error_description": self.description}
        return JSONResponse(body, status_code=self.status, headers={**NO_STORE, **(headers or {})})


def invalid_request(reason: str, description: str) -> OAuthError:
    return OAuthError("invalid_request", reason, description)


def invalid_grant(reason: str, description: str) -> OAuthError:
    return OAuthError("invalid_grant", reason, description)


def invalid_target(reason: str, description: str) -> OAuthError:
    return OAuthError("invalid_target", reason, description)


def invalid_client(description: str) -> OAuthError:
    """401, so a client whose registration was evicted registers again (Claude does)."""
    return OAuthError("invalid_client", "unknown_client", description, status=401)
