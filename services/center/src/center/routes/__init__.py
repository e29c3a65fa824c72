"""The center's HTTP routes, one module per resource; `ROUTERS` is what the app mounts."""

from center.routes import audit, grants, members, nodes, public, requests, session

ROUTERS = (
    public.router,
    members.router,
    session.router,
    grants.router,
    requests.router,
    audit.router,
    nodes.router,
)

__all__ = ["ROUTERS"]
