"""The console's static files (stylesheet, script, icon), from the package itself: no
external asset, ever."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Response

from center.console.web import PREFIX, ConsoleRoute

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)
TYPES = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_FILES = {name: (files("center.console") / "static" / name).read_bytes() for name in TYPES}


@router.get("/static/{name}", summary="The console's stylesheet, script and icon")
async def static(name: str) -> Response:
    if name not in _FILES:
        return Response("not found", status_code=404, media_type="text/plain")
    headers = {"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}
    return Response(_FILES[name], media_type=TYPES[name], headers=headers)
