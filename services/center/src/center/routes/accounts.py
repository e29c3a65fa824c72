"""The public account routes (`/v1/accounts`): the registration settings, registering, and
redeeming an e-mail code. No credential is needed; bodies are JSON of at most 4 KiB.

One `Accounts` per running center, made on first use, holds the process-local attempt
limits. Passwords and codes arrive as SecretStr, so no error or log can echo them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from center.accounts import Accounts
from center.errors import InvalidArgumentError, TooLargeError
from center.routes.deps import NO_STORE, CenterDep, Out

MAX_BODY = 4096


async def small_body(request: Request) -> None:
    """Refuse (413) a body over 4 KiB before anything else looks at it."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise TooLargeError(MAX_BODY)
    if len(await request.body()) > MAX_BODY:
        raise TooLargeError(MAX_BODY)


router = APIRouter(prefix="/v1/accounts", tags=["accounts"], dependencies=[Depends(small_body)])


def get_accounts(request: Request, center: CenterDep) -> Accounts:
    accounts: Accounts | None = getattr(request.app.state, "accounts", None)
    if accounts is None or accounts.store is not center.store:
        accounts = Accounts(center.settings, center.store, center.passwords)
        request.app.state.accounts = accounts
    return accounts


AccountsDep = Annotated[Accounts, Depends(get_accounts)]
CHOSEN_LENGTH = "12-256 UTF-8 bytes"


class RegisterIn(BaseModel):
    """E-mail mode: `email` (and optionally `locale`, e.g. `de-AT`). Username mode:
    `username` and `password`."""

    model_config = ConfigDict(extra="forbid")

    email: str | None = Field(None, max_length=320, description="ASCII mailbox address")
    locale: str | None = Field(None, max_length=35, description="Mail language; default en")
    username: str | None = Field(None, max_length=64, description="3-64 of A-Z a-z 0-9 - _")
    password: SecretStr | None = Field(
        None, min_length=1, max_length=256, description=CHOSEN_LENGTH
    )


class VerifyIn(BaseModel):
    """The address registered, the code from the mail, and the password chosen now."""

    model_config = ConfigDict(extra="forbid")

    email: str = Field(max_length=320)
    code: SecretStr = Field(min_length=1, max_length=64, description="From the mail")
    password: SecretStr = Field(min_length=1, max_length=256, description=CHOSEN_LENGTH)


class Registration(Out):
    registration: Literal["off", "email", "username"]
    locales: list[str] = Field(description="Languages the mails are written in")
    code_minutes: int = Field(description="How long a mailed code is valid")
    password_bytes: list[int] = Field(description="The shortest and longest password, in bytes")


class Account(Out):
    """A new account: its member, its own vault and the node it is placed on."""

    id: str
    role: str
    scope: str
    vault: str
    node: str
    mcp_url: str = Field(description="The MCP URL of the node holding the vault")
    credential: str = Field(description="The member credential (sbm_…), shown once")


class CodeSent(Out):
    status: Literal["accepted"]
    message: str


@router.get(
    "",
    summary="Whether and how this center takes registrations (no SMTP details)",
    response_model=Registration,
)
async def settings(accounts: AccountsDep) -> dict[str, Any]:
    return accounts.public_view()


@router.post(
    "/register",
    status_code=202,
    summary="Register: e-mail mode mails a code (202); username mode creates the account (201)",
    response_model=CodeSent,
    responses={
        201: {"model": Account, "description": "Username mode: the account, credential once"}
    },
)
async def register(body: RegisterIn, accounts: AccountsDep) -> CodeSent | JSONResponse:
    mode = accounts.settings.registration
    accounts.require(mode)
    if mode == "username":
        if body.username is None or body.password is None or body.email is not None:
            raise InvalidArgumentError(
                "username", "this center registers by username: send it and a password"
            )
        created = await accounts.register_username(body.username, body.password.get_secret_value())
        account = Account.model_validate(created).model_dump(mode="json")
        return JSONResponse(account, status_code=201, headers=NO_STORE)
    if body.email is None or body.password is not None or body.username is not None:
        raise InvalidArgumentError(
            "email", "send your email (and locale); the password comes later"
        )
    await accounts.request_code(body.email, body.locale)
    return CodeSent(
        status="accepted",
        message="if this address can register, a code is on its way; it is valid 15 minutes",
    )


@router.post(
    "/verify",
    status_code=201,
    summary="Redeem a code: the account, shown once",
    response_model=Account,
)
async def verify(body: VerifyIn, accounts: AccountsDep, response: Response) -> dict[str, Any]:
    created = await accounts.verify(
        body.email, body.code.get_secret_value(), body.password.get_secret_value()
    )
    response.headers.update(NO_STORE)
    return created
