"""One error shape for the whole API: {"code", "detail", ...}, with the engine's codes unchanged."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from games import messages
from games.errors import Code, ServiceError
from games.infra import metrics
from games.infra.ratelimit import RateLimited

_CODE_OF_DRF = {
    exceptions.NotAuthenticated: Code.not_authenticated,
    exceptions.AuthenticationFailed: Code.authentication_failed,
    exceptions.PermissionDenied: Code.permission_denied,
    exceptions.NotFound: Code.not_found,
    exceptions.MethodNotAllowed: Code.method_not_allowed,
    exceptions.ParseError: Code.malformed_request,
    exceptions.UnsupportedMediaType: Code.unsupported_media_type,
    exceptions.NotAcceptable: Code.not_acceptable,
    exceptions.Throttled: Code.rate_limited,
    exceptions.ValidationError: Code.invalid_input,
}


# The refusals of a presented key or token that keep their own code (games.accounts).
_CREDENTIAL_CODES = frozenset({Code.key_expired, Code.key_revoked, Code.token_expired})


def handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler, reshaped: every error body has a stable `code` and a `detail` in
    the request's language (games/messages.py)."""
    if isinstance(exc, RateLimited):
        metrics.refused(exc.body()["code"])
        return Response(exc.body(), status=429, headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, ServiceError):
        metrics.refused(exc.code)
        retry = exc.details.get("retry_after")  # an answer still being computed (hints, reviews)
        return Response(exc.body(), status=exc.status, headers={"Retry-After": str(retry)} if retry else None)
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _CODE_OF_DRF.items() if isinstance(exc, cls)), Code.invalid_request).value
    given = getattr(exc.detail, "code", None) if isinstance(exc, exceptions.AuthenticationFailed) else None
    if given in _CREDENTIAL_CODES:  # an ErrorDetail's: a revoked or expired key or token
        code = str(given)
    metrics.refused(code)
    if isinstance(exc, exceptions.ValidationError):
        detail = messages.detail(code, "the request body is not valid")
        response.data = {"code": code, "detail": detail, "fields": response.data}
    else:
        detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
        response.data = {"code": code, "detail": messages.detail(code, str(detail))}
    return response
