"""Every failure the center reports, each with a stable machine `code` and an HTTP status.

Domain code raises these; one exception handler in `app.py` renders every one of them as
`{"error": {"code": ..., "message": ...}}`. A message says what happened and what to do
next, and never holds a secret, a token, a password or a credential.

    CenterError
    ├── ConfigError                  settings rejected at start (the value is never shown)
    ├── ListenError                  serve cannot bind its host and port (found before start)
    ├── InvalidArgumentError    400  invalid_argument: a field is malformed or inconsistent
    │   └── InvalidTargetError  400  invalid_target: a resource no registered node has
    ├── UnauthorizedError       401  unauthorized: no, unknown or wrong kind of bearer
    ├── ForbiddenError          403  forbidden: authenticated, but not allowed to do this
    ├── NotFoundError           404  not_found: the named member, grant or token is absent
    ├── ConflictError           409  conflict: the state does not allow the change (again)
    │   └── ExistsError         409  exists: an object with that id already exists
    ├── TooLargeError           413  too_large: the request body exceeds the limit
    ├── LimitError              429  limit_exceeded: a count limit is reached
    │   └── RateLimitedError    429  rate_limited: too many attempts; `Retry-After` says when
    └── UnavailableError        503  unavailable
        ├── RestartRequiredError 503 restart_required: persistence failed; changes are locked
        ├── StorageError        503  storage: the database did not answer
        ├── DatabaseUnusableError 503 database: the configured database cannot be used
        ├── SchemaError         503  schema: the schema is older or newer than this center
        ├── AuditChainError     503  audit_broken: the audit log fails verification
        └── MailError           503  mail_failed: the mail server did not take a message
"""

from __future__ import annotations


class CenterError(Exception):
    """Base of every center failure; `message` is for people, `code` for programs."""

    status = 500
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(CenterError):
    """The settings cannot start a center. `problems` lists one line per bad setting."""

    code = "config"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("configuration rejected:\n  " + "\n  ".join(problems))
        self.problems = problems


class ListenError(CenterError):
    """`serve` cannot bind SECONDBRAIN_CENTER_HOST:PORT; found before anything is opened."""

    code = "listen"

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(
            f"cannot listen on {host}:{port} ({reason}); stop what uses it, or set"
            " SECONDBRAIN_CENTER_PORT (or SECONDBRAIN_CENTER_HOST) to a free one"
        )


class InvalidArgumentError(CenterError):
    status = 400
    code = "invalid_argument"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class InvalidTargetError(InvalidArgumentError):
    """A token asked for a resource (audience) that no registered node has: every node
    would answer it with the generic 401, so it is refused here, as OAuth does (RFC 8707)."""

    code = "invalid_target"


class UnauthorizedError(CenterError):
    """Answer 401 with `WWW-Authenticate: Bearer`; the message never says which check failed
    beyond what the caller may know."""

    status = 401
    code = "unauthorized"


class ForbiddenError(CenterError):
    status = 403
    code = "forbidden"


class NotFoundError(CenterError):
    status = 404
    code = "not_found"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"no {kind} {ident!r}; list them to see which exist")
        self.kind = kind
        self.ident = ident


class ConflictError(CenterError):
    status = 409
    code = "conflict"


class ExistsError(ConflictError):
    code = "exists"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} already exists; choose another id or change it")
        self.kind = kind
        self.ident = ident


class TooLargeError(CenterError):
    status = 413
    code = "too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body exceeds {limit} bytes; send a smaller body")
        self.limit = limit


class LimitError(CenterError):
    status = 429
    code = "limit_exceeded"


class RateLimitedError(LimitError):
    code = "rate_limited"

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many attempts; try again in {retry_after} s")
        self.retry_after = retry_after


class UnavailableError(CenterError):
    status = 503
    code = "unavailable"


class RestartRequiredError(UnavailableError):
    code = "restart_required"

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"changes are locked after a persistence failure ({reason}); repair the data "
            "directory or database and restart the center. Reads still work."
        )
        self.reason = reason


class StorageError(UnavailableError):
    code = "storage"

    def __init__(self, problem: str) -> None:
        super().__init__(f"the database did not complete the operation ({problem}); retry later")
        self.problem = problem


class DatabaseUnusableError(UnavailableError):
    """The configured database cannot be used as set up (missing database or schema, a
    refused user, no server): found at `validate` and before `serve` starts; the message
    is one line that says what to fix."""

    code = "database"


class SchemaError(UnavailableError):
    """The database schema is at another revision than this center's code: older (run
    `secondbrain-center migrate`) or newer (run the release that migrated it)."""

    code = "schema"


class AuditChainError(UnavailableError):
    code = "audit_broken"

    def __init__(self, seq: int | None, problem: str, detail: str = "") -> None:
        where = f"at seq {seq}" if seq is not None else "at its end"
        super().__init__(
            f"audit log fails verification {where}: {problem}"
            f"{' (' + detail + ')' if detail else ''}; restore it from a backup "
            "or inspect it with `secondbrain-center audit verify`"
        )
        self.seq = seq
        self.problem = problem


class MailError(UnavailableError):
    code = "mail_failed"

    def __init__(self, problem: str) -> None:
        super().__init__(f"the mail server did not take the message ({problem}); try again later")
        self.problem = problem
