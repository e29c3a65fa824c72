"""Remembered OAuth consents (`/v1/consents`): what each member allowed which client.

The operator lists everyone's (or one member's) and revokes any; a member lists and
revokes its own. Revoking ends that member's sign-ins with the client: its refresh
tokens stop working and the access tokens they minted are revoked.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import Field

from center.errors import ForbiddenError
from center.oauth import consent
from center.principals import check_member_id
from center.routes.deps import Caller, CenterDep, Out

router = APIRouter(tags=["consents"])
SECONDS = "Unix time, seconds"


class ConsentOut(Out):
    """A remembered consent: the client may sign the member in for `scope` in `vaults`
    without asking again, while it asks for no more than `asked_scope` in `asked_vaults`
    and returns to `origin`."""

    id: str
    member: str
    client_id: str = Field(description="A registered client's id, or its metadata document URL")
    client_name: str | None = Field(description="Its name when the consent was given")
    origin: str = Field(description="The redirect origin consented to")
    scope: str = Field(description="The permissions allowed (space-separated)")
    vaults: list[str] = Field(description='The vaults allowed (["*"]: every vault)')
    asked_scope: str = Field(description="What the client asked for")
    asked_vaults: list[str]
    created: int = Field(description=SECONDS)
    updated: int = Field(description=f"The last decision, {SECONDS}")
    used: int | None = Field(description=f"The last sign-in it skipped the page for, {SECONDS}")


class ConsentList(Out):
    consents: list[ConsentOut]


class RevokedConsent(ConsentOut):
    ended_sign_ins: int = Field(description="Refresh-token families of the client revoked")


@router.get(
    "/v1/consents",
    summary="Remembered OAuth consents: everyone's (operator) or your own",
    response_model=ConsentList,
)
async def list_consents(
    center: CenterDep,
    caller: Caller,
    member: Annotated[
        str | None, Query(description="Only this member's (the operator; a member: its own id)")
    ] = None,
) -> dict[str, Any]:
    if member is not None:
        check_member_id(member)
        if not caller.is_operator and member != caller.id:
            raise ForbiddenError("a member lists only its own consents; leave out member")
    async with center.store.read() as session:
        return {"consents": await consent.listing(session, caller, member)}


@router.delete(
    "/v1/consents/{consent_id}",
    summary="Revoke a consent; the client's sign-ins for that member end",
    response_model=RevokedConsent,
)
async def revoke_consent(
    consent_id: Annotated[str, Path(description="From `GET /v1/consents`")],
    center: CenterDep,
    caller: Caller,
) -> dict[str, Any]:
    async with center.store.change() as work:
        return await consent.revoke(work, caller, consent_id)
