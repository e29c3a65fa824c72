"""The center's HTTP routes, one module per resource; `ROUTERS` is what the app mounts.

The API's routers are mounted under one that declares the center's error body for every
route; the OAuth endpoints declare OAuth's error shapes themselves.
"""

from fastapi import APIRouter

from center.routes import (
    accounts,
    audit,
    consents,
    grants,
    keys,
    leases,
    members,
    nodes,
    oauth,
    public,
    requests,
    session,
    tokens,
)
from center.routes.deps import ERRORS

api = APIRouter(responses=ERRORS)
for _module in (
    public,
    members,
    session,
    tokens,
    grants,
    requests,
    audit,
    nodes,
    leases,
    keys,
    accounts,
    consents,
):
    api.include_router(_module.router)
ROUTERS = (api, oauth.router)

__all__ = ["ROUTERS"]
