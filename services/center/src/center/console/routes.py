"""The console's routers, in the order the app mounts them."""

from center.console import (
    audit,
    consents,
    grants,
    me,
    members,
    nodes,
    requests,
    signin,
    static,
    tokens,
)

CONSOLE_ROUTERS = (
    static.router,
    signin.router,
    requests.router,
    members.router,
    grants.router,
    tokens.router,
    consents.router,
    nodes.router,
    audit.router,
    me.router,
)

__all__ = ["CONSOLE_ROUTERS"]
