"""The /graphql/ endpoint: bearer authentication, depth and cost limits, coded errors."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView
from graphql import GraphQLError

from games.accounts import authenticate
from games.graphql.limits import limits_rule
from games.services import ServiceError

MAX_DEPTH = 12
MAX_COST = 10_000


@method_decorator(csrf_exempt, name="dispatch")  # bearer tokens, never cookies: no CSRF to guard
class HeartsGraphQLView(GraphQLView):
    """GraphiQL in a browser; JSON for clients. `Authorization: Bearer <app key or player token>`
    sets the caller (absent: only createGuest works; bad: 401)."""

    graphiql = True
    validation_rules = (limits_rule(MAX_DEPTH, MAX_COST),)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        request.principal = None  # type: ignore[attr-defined]
        if header:
            scheme, _, secret = header.partition(" ")
            principal = authenticate(secret.strip()) if scheme.lower() == "bearer" else None
            if principal is None:
                return JsonResponse(
                    {
                        "errors": [
                            {
                                "message": "unknown or revoked key or token",
                                "extensions": {"code": "authentication_failed"},
                            }
                        ]
                    },
                    status=401,
                )
            request.principal = principal  # type: ignore[attr-defined]
            request.bearer = secret.strip()  # type: ignore[attr-defined]
        return super().dispatch(request, *args, **kwargs)

    @staticmethod
    def format_error(error: Exception) -> dict[str, Any]:
        """Every error carries extensions.code: the service's code, or a GraphQL one."""
        formatted = GraphQLView.format_error(error)
        original = getattr(error, "original_error", None)
        extensions = formatted.setdefault("extensions", {})
        if isinstance(original, ServiceError):
            extensions["code"] = original.code
            formatted["message"] = original.message
        elif isinstance(error, GraphQLError) and original is None:
            extensions.setdefault("code", "invalid_query")
        else:
            extensions["code"] = "internal_error"
            formatted["message"] = "internal error"
        return formatted
