"""A database that does not answer (down, restarting, pool exhausted): a 503 with a code, never a 500."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from games import messages
from games.errors import Code

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 2
DETAIL = "the database is not answering; retry shortly (nothing was changed by this request)"
UNAVAILABLE = (OperationalError, InterfaceError)


def unavailable_body(graphql: bool) -> dict[str, object]:
    code = Code.service_unavailable.value
    detail = messages.detail(code, DETAIL)
    if graphql:
        return {"data": None, "errors": [{"message": detail, "extensions": {"code": code}}]}
    return {"code": code, "detail": detail}


class DatabaseUnavailable:
    """The innermost middleware: a view (REST, GraphQL, a stream opening) that fails because the
    database cannot be reached answers 503 with `service_unavailable` and Retry-After. A write
    that failed this way was rolled back (it ran in one transaction), so a retry with the same
    Idempotency-Key is safe."""

    # Sync only, like every middleware of the chain: under ASGI, Django then crosses from the event
    # loop to a thread once per request, at the top of the chain. One middleware able to run async
    # at the bottom made every one above it down to the first sync-only one run async, and Django
    # runs each of those (its own MiddlewareMixin ones: sessions, CSRF, auth, messages...) as a hop
    # to a thread and back for each of their methods: a dozen hops a request (issue 37).
    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[..., object]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> object:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, UNAVAILABLE):
            return None
        log.warning("database unavailable: %s %s: %s", request.method, request.path, exception)
        graphql = request.path.rstrip("/") == "/graphql"
        response = JsonResponse(unavailable_body(graphql), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
