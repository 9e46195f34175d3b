"""One error shape for the whole API: {"code", "detail", ...}, with the engine's codes unchanged."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from games import metrics
from games.ratelimit import RateLimited
from games.services import ServiceError

STATUS_OF_KIND = {
    "malformed": status.HTTP_400_BAD_REQUEST,
    "auth": status.HTTP_401_UNAUTHORIZED,
    "not_found": status.HTTP_404_NOT_FOUND,
    "conflict": status.HTTP_409_CONFLICT,
    "rules": status.HTTP_422_UNPROCESSABLE_ENTITY,
}
_CODE_OF_DRF = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.ParseError: "malformed_request",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "invalid_input",
}


def handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler, reshaped: every error body has a stable `code` and a `detail`."""
    if isinstance(exc, RateLimited):
        metrics.refused(exc.body()["code"])
        return Response(exc.body(), status=429, headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, ServiceError):
        metrics.refused(exc.code)
        return Response(
            {"code": exc.code, "detail": exc.message, **exc.details}, status=STATUS_OF_KIND[exc.kind]
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _CODE_OF_DRF.items() if isinstance(exc, cls)), "error")
    metrics.refused(code)
    if isinstance(exc, exceptions.ValidationError):
        response.data = {"code": code, "detail": "the request body is not valid", "fields": response.data}
    else:
        detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
        response.data = {"code": code, "detail": str(detail)}
    return response
