"""Request limits: a body larger than MAX_REQUEST_BYTES is refused with 413 before any view reads it, and
every answer counted against a rate limit carries the RateLimit fields."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from games import messages


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
            return JsonResponse(messages.body("malformed_request", "bad Content-Length"), status=400)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and length > limit:
            return too_large(limit)
        return self.get_response(request)


def too_large(limit: int) -> JsonResponse:
    return JsonResponse(
        messages.body("request_too_large", f"request bodies are at most {limit} bytes", limit=limit),
        status=413,
    )


class RateLimitHeaders:
    """Adds `RateLimit-Policy` and `RateLimit` (games/infra/ratelimit.py, `headers`) to the answer of
    a request counted against the rate limits, a success as well as a 429: whatever counted it
    (the REST throttle, a stream opening) leaves the fields in `request.rate_limit_headers`.
    Works in both the sync and the async chain, so an event stream keeps its async iterator."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return self._add(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> Any:
        get_response: Callable[[HttpRequest], Awaitable[Any]] = self.get_response
        return self._add(request, await get_response(request))

    @staticmethod
    def _add(request: HttpRequest, response: Any) -> Any:
        for name, value in (getattr(request, "rate_limit_headers", None) or {}).items():
            if name not in response:
                response[name] = value
        return response
