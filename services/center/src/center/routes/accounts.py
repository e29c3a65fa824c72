"""The public account routes (`/v1/accounts`): the registration settings, registering, and
redeeming an e-mail code. No credential is needed; bodies are JSON of at most 4 KiB.

One `Accounts` per running center, made on first use, holds the process-local attempt
limits. Passwords and codes arrive as SecretStr, so no error or log can echo them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from center.accounts import Accounts
from center.errors import InvalidArgumentError, TooLargeError
from center.routes.deps import NO_STORE, CenterDep

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


@router.get("", summary="Whether and how this center takes registrations (no SMTP details)")
async def settings(accounts: AccountsDep) -> dict[str, Any]:
    return accounts.public_view()


@router.post(
    "/register",
    status_code=202,
    summary="Register: e-mail mode mails a code (202); username mode creates the account (201)",
    responses={201: {"description": "Username mode: the account; its credential shown once"}},
)
async def register(body: RegisterIn, accounts: AccountsDep, response: Response) -> dict[str, Any]:
    mode = accounts.settings.registration
    accounts.require(mode)
    if mode == "username":
        if body.username is None or body.password is None or body.email is not None:
            raise InvalidArgumentError(
                "username", "this center registers by username: send it and a password"
            )
        created = await accounts.register_username(body.username, body.password.get_secret_value())
        response.status_code = 201
        response.headers.update(NO_STORE)
        return created
    if body.email is None or body.password is not None or body.username is not None:
        raise InvalidArgumentError(
            "email", "send your email (and locale); the password comes later"
        )
    await accounts.request_code(body.email, body.locale)
    return {
        "status": "accepted",
        "message": "if this address can register, a code is on its way; it is valid 15 minutes",
    }


@router.post("/verify", status_code=201, summary="Redeem a code: the account, shown once")
async def verify(body: VerifyIn, accounts: AccountsDep, response: Response) -> dict[str, Any]:
    created = await accounts.verify(
        body.email, body.code.get_secret_value(), body.password.get_secret_value()
    )
    response.headers.update(NO_STORE)
    return created
