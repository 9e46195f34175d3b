"""The /graphql/ endpoint: bearer authentication, depth and cost limits, coded errors."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView
from graphql import GraphQLError, OperationType, parse, specified_rules
from graphql.error import GraphQLSyntaxError
from graphql.language import IntValueNode, OperationDefinitionNode, VariableNode

from games import metrics, ratelimit
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
    # graphql-core's own rules (unknown fields, types, variables...) and then the limits: a
    # rules list replaces the standard rules, so they are named here.
    validation_rules = (*specified_rules, limits_rule(MAX_DEPTH, MAX_COST))

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        request.principal = None  # type: ignore[attr-defined]
        if header:
            scheme, _, secret = header.partition(" ")
            principal = authenticate(secret.strip()) if scheme.lower() == "bearer" else None
            if principal is None:
                metrics.refused("authentication_failed", "graphql")
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
        try:
            if request.principal is None:  # type: ignore[attr-defined]
                if request.method == "POST":  # createGuest
                    ratelimit.check_address(ratelimit.client_address(request.META))
            elif not _in_turn_action(request, request.principal):  # type: ignore[attr-defined]
                ratelimit.check_principal(request.principal)  # type: ignore[attr-defined]
        except ratelimit.RateLimited as exc:
            body = exc.body()
            metrics.refused(body["code"], "graphql")
            error = {"message": body.pop("detail"), "extensions": body}
            return JsonResponse(
                {"errors": [error]}, status=429, headers={"Retry-After": str(exc.retry_after)}
            )
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
        metrics.refused(extensions["code"], "graphql")
        return formatted


_ACTIONS = {"passCards", "playCard", "chooseMoon"}


def _in_turn_action(request: HttpRequest, principal: Any) -> bool:
    """A document that is one pass, play or moon mutation by a player at their own table on
    their turn: never rate limited, like the REST action."""
    if request.method != "POST" or principal.player is None:
        return False
    try:
        data = json.loads(request.body or b"{}")
        document = parse(data["query"])
    except (ValueError, KeyError, TypeError, GraphQLSyntaxError):
        return False
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(operations) != 1 or operations[0].operation != OperationType.MUTATION:
        return False
    fields = operations[0].selection_set.selections
    field = fields[0] if len(fields) == 1 else None
    if field is None or getattr(field, "name", None) is None or field.name.value not in _ACTIONS:
        return False
    argument = next((a.value for a in field.arguments if a.name.value == "tableId"), None)
    if isinstance(argument, IntValueNode):
        table_id: Any = argument.value
    elif isinstance(argument, VariableNode):
        table_id = (data.get("variables") or {}).get(argument.name.value)
    else:
        return False
    try:
        return ratelimit.in_turn(principal, int(table_id))
    except (TypeError, ValueError):
        return False
