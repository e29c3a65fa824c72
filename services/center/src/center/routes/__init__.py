"""The center's HTTP routes, one module per resource; `ROUTERS` is what the app mounts."""

from center.routes import (
    accounts,
    audit,
    grants,
    keys,
    members,
    nodes,
    oauth,
    public,
    requests,
    session,
)

ROUTERS = (
    public.router,
    members.router,
    session.router,
    grants.router,
    requests.router,
    audit.router,
    nodes.router,
    keys.router,
    accounts.router,
    oauth.router,
)

__all__ = ["ROUTERS"]
