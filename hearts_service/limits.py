"""Request size limit: a body larger than MAX_REQUEST_BYTES is refused with 413 before any view reads it."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class BodySizeLimit:
    """413 `request_too_large` for a declared Content-Length over the limit; a body sent without
    one (chunked) is cut at the same size by Django itself (DATA_UPLOAD_MAX_MEMORY_SIZE), which
    the JSON 400 handler answers as `request_too_large` too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"code": "malformed_request", "detail": "bad Content-Length"}, status=400)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and length > limit:
            return too_large(limit)
        return self.get_response(request)


def too_large(limit: int) -> JsonResponse:
    return JsonResponse(
        {"code": "request_too_large", "detail": f"request bodies are at most {limit} bytes", "limit": limit},
        status=413,
    )
