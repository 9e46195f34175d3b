"""Bearer authentication for apps (API keys) and players (tokens)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from games import messages
from games.accounts import Principal, principal_from_header
from games.errors import ServiceError
from games.infra import ratelimit
from games.operations import scopes


class BearerAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <app key or player token>`; the user is a Principal, and a player's
    chosen language becomes the request's."""

    def authenticate(self, request: Request) -> tuple[Principal, None] | None:
        try:
            principal = principal_from_header(request.headers.get("Authorization", ""))
        except ServiceError as exc:  # DRF's own failure: a 401 with WWW-Authenticate, and the code
            raise exceptions.AuthenticationFailed(exc.message, code=exc.code) from exc
        if principal is None:
            return None
        if principal.player is not None:
            messages.prefer(principal.player.language)  # the player's language wins over Accept-Language
        return principal, None

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class IsPrincipal(permissions.BasePermission):
    """Any authenticated app or player; an app key reading (GET) needs the scope its route declares
    (games.operations.scopes; 403 missing_scope without). Writes check theirs in their operation."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, Principal):
            return False
        if user.is_app and request.method in permissions.SAFE_METHODS and request.resolver_match is not None:
            user.require_scope(scopes.rest_read(request.resolver_match.route))
        return True

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return True


class RateLimit(BaseThrottle):
    """The rate limits of games/infra/ratelimit.py for every REST request: per token and app when
    authenticated, per address otherwise; a view with `in_turn_exempt` (actions) is not limited
    for a seated player on their turn. Over a limit raises RateLimited (429, Retry-After). The
    answer, either way, carries the RateLimit fields (hearts_service.limits.RateLimitHeaders)."""

    def allow_request(self, request: Request, view: Any) -> bool:
        if not settings.RATE_LIMITS_ENABLED:
            return True
        user = request.user
        if not isinstance(user, Principal):
            count_against_limits(request._request, None)
            return True
        try:
            count_against_limits(request._request, user)
        except ratelimit.RateLimited:
            # Only a request over a limit pays for the turn lookup (it reads the game state).
            table_id = getattr(view, "kwargs", {}).get("table_id")
            if getattr(view, "in_turn_exempt", False) and table_id and ratelimit.in_turn(user, table_id):
                return True
            raise
        return True


def count_against_limits(request: HttpRequest, principal: Principal | None) -> None:
    """Count one request of this caller (its address when None) and leave the RateLimit fields of
    the answer on the request; RateLimited when over a limit (its fields left there as well)."""
    try:
        if principal is None:
            quotas = ratelimit.check_address(ratelimit.client_address(request.META))
        else:
            quotas = ratelimit.check_principal(principal)
    except ratelimit.RateLimited as exc:
        request.rate_limit_headers = ratelimit.headers(exc.quotas)  # type: ignore[attr-defined]  # read by hearts_service.limits
        raise
    request.rate_limit_headers = ratelimit.headers(quotas)  # type: ignore[attr-defined]  # read by hearts_service.limits


class BearerScheme(OpenApiAuthenticationExtension):
    """Documents BearerAuthentication in the OpenAPI schema."""

    target_class = "games.api.auth.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An app API key or a player token."}
