"""The console's files under /console: the built single-page app, with the headers that keep it to itself.

Every path under /console that is not a file is the app's own page (index.html, never cached, so a new build is
picked up at once); the hashed files under /console/assets are cached for good. Every answer carries the console's
Content-Security-Policy: scripts, styles, images and connections from this origin only, no inline script, never in a
frame.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

PATH = "/console"
# The folder `make install` builds the console into (console/, with Vite); `console.dir` points elsewhere.
BUILT = Path(__file__).parent / "static"
POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
NOT_BUILT = (
    "The console is not built here: run `make install` (it builds console/ with the Node it installs), or set "
    "console.dir (SAIP_CONSOLE_DIR) to a built console, then restart the gateway. The REST API at /api/v1 works "
    "without it."
)


def is_console(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")


class ConsoleFiles:
    """The ASGI app of every path under /console."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self._response(scope)
        response.headers.update(HEADERS)
        await response(scope, receive, send)

    def _response(self, scope: Scope) -> Response:
        if scope["method"] not in ("GET", "HEAD"):
            return PlainTextResponse("The console's files are read with GET.", 405, headers={"Allow": "GET, HEAD"})
        path: str = scope["path"]
        if path == PATH:
            return RedirectResponse(PATH + "/", 308)
        index = self.directory / "index.html"
        if not index.is_file():
            return PlainTextResponse(NOT_BUILT, 503)
        relative = path.removeprefix(PATH + "/")
        found = self._file(relative)
        asset = relative.startswith("assets/")
        if found is None and asset:
            return PlainTextResponse(f"No console file {path}: the page may come from an older build; reload it.", 404)
        if found is None:
            return FileResponse(index, headers={"Cache-Control": "no-store"})
        cache = "public, max-age=31536000, immutable" if asset else "no-cache"
        return FileResponse(found, headers={"Cache-Control": cache})

    def _file(self, relative: str) -> Path | None:
        """The built file at `relative`, never one outside the console's folder; None when it is an app route."""
        if not relative or "\\" in relative or "\x00" in relative:
            return None
        candidate = (self.directory / relative).resolve()
        if not candidate.is_relative_to(self.directory) or not candidate.is_file():
            return None
        return candidate
