"""The console's routers, in the order the app mounts them."""

from center.console import requests, signin, static

CONSOLE_ROUTERS = (static.router, signin.router, requests.router)

__all__ = ["CONSOLE_ROUTERS"]
