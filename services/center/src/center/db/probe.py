"""Connect to the configured PostgreSQL before serving and say in one line what is wrong.

`validate` and `serve` call `check_database` first, so a database or schema that does not
exist, a refused user or a server that does not answer is named with the fix — never a
traceback ending in "retry later". The URL's password is never part of a message.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from center.config import Settings
from center.db.engine import current_revision, make_engine, schema_problem
from center.errors import DatabaseUnusableError, SchemaError

URL_ENV = "SECONDBRAIN_CENTER_DATABASE_URL"
SCHEMA_ENV = "SECONDBRAIN_CENTER_DATABASE_SCHEMA"
NO_DATABASE, BAD_LOGIN, BAD_PASSWORD = "3D000", "28000", "28P01"


async def check_database(settings: Settings, *, revision: bool = True) -> None:
    """Connect, and check that the schema exists; DatabaseUnusableError names the problem.
    With `revision`, SchemaError if the tables are at another revision than this code's
    (`serve` refuses them; `migrate` is what fixes them). SQLite needs no check: its file
    is made in the data directory, and its one process migrates at start."""
    if settings.backend != "postgresql":
        return
    url = make_url(settings.url)
    engine = make_engine(settings)
    try:
        async with engine.connect() as connection:
            if settings.database_schema:
                found = await connection.execute(
                    text("SELECT 1 FROM pg_namespace WHERE nspname = :name"),
                    {"name": settings.database_schema},
                )
                if found.first() is None:
                    raise DatabaseUnusableError(_no_schema(url, settings.database_schema))
            problem = schema_problem(await connection.run_sync(current_revision))
            if revision and problem is not None:
                raise SchemaError(problem)
    except (SQLAlchemyError, OSError) as exc:
        raise DatabaseUnusableError(describe(url, exc)) from None
    finally:
        await engine.dispose()


def describe(url: URL, exc: BaseException) -> str:
    """One line for a failure to connect to `url`, with what to do."""
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    code = getattr(getattr(exc, "orig", None), "pgcode", None)
    if code == NO_DATABASE:
        return (
            f"database {url.database!r} does not exist on {where} (create it: createdb"
            f" -h {url.host or 'localhost'} -p {url.port or 5432}"
            f"{f' -U {url.username}' if url.username else ''} {url.database})"
        )
    if code in (BAD_LOGIN, BAD_PASSWORD):
        return (
            f"PostgreSQL on {where} refused user {url.username!r} ({_first_line(exc)});"
            f" fix the user or password in {URL_ENV}"
        )
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
        return f"no PostgreSQL answers on {where} ({reason}); start it, or fix {URL_ENV}"
    if isinstance(exc, DBAPIError):
        return f"PostgreSQL on {where}: {_first_line(exc)}; check {URL_ENV}"
    return f"PostgreSQL on {where}: {type(exc).__name__}; check {URL_ENV}"


def _no_schema(url: URL, schema: str) -> str:
    return (
        f"schema {schema!r} does not exist in database {url.database!r} (create it: CREATE"
        f" SCHEMA {schema}; or unset {SCHEMA_ENV} to use the public schema)"
    )


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(exc).__name__
