"""The reference web client: the static files of `web/` served at /play/ (plain ES modules, no build
step). The page talks to the service only through the public REST API and the event stream."""

from __future__ import annotations

from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
}
FOLDERS = {"i18n"}  # the language catalogs, web/i18n/<language>.json
# Only the page's own files: no inline scripts, nothing from another origin.
POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def _file(name: str, folder: str = "") -> HttpResponse:
    """One file of web/ (or of one of its FOLDERS) by its plain name: no other folder, so nothing
    outside web/ can be named."""
    kind = TYPES.get(Path(name).suffix)
    if folder and folder not in FOLDERS:
        raise Http404(folder)
    target = WEB_DIR / folder / name
    if kind is None or "/" in name or name.startswith(".") or not target.is_file():
        raise Http404(name)
    response = HttpResponse(target.read_bytes(), content_type=kind)
    response["Cache-Control"] = "no-cache"
    response["Content-Security-Policy"] = POLICY
    response["X-Content-Type-Options"] = "nosniff"
    return response


def index(request: HttpRequest) -> HttpResponse:
    """GET /play/: the page."""
    return _file("index.html")


def asset(request: HttpRequest, name: str) -> HttpResponse:
    """GET /play/<name>: the page's scripts and style sheet."""
    return _file(name)


def folder_asset(request: HttpRequest, folder: str, name: str) -> HttpResponse:
    """GET /play/i18n/<language>.json: a language catalog of the page."""
    return _file(name, folder)


urlpatterns = [
    path("", index, name="play"),
    path("<str:name>", asset, name="play-asset"),
    path("<str:folder>/<str:name>", folder_asset, name="play-folder-asset"),
]
