"""Project-level views that are not about any one game, such as the probes load balancers poll."""

import logging

import redis
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from games import messages
from hearts_service.limits import too_large

logger = logging.getLogger(__name__)

# A readiness probe must answer well within its own timeout (Kubernetes: 1-5 s), so Redis gets this
# long to connect and answer; the database is bounded by its connect_timeout (settings).
READYZ_REDIS_TIMEOUT = 1.0


def healthz(request: HttpRequest) -> JsonResponse:
    """Answer without touching the database, so a probe reports the process alive while the DB is down."""
    return JsonResponse({"status": "ok"})


def _database_ready() -> bool:
    """One trivial query on the connection the service uses; any database error means not ready."""
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        logger.warning("readyz: database check failed", exc_info=True)
        return False
    return True


def _redis_ready(url: str) -> bool:
    """PING with short timeouts on a fresh connection (the broker, pub/sub and cache all use this URL)."""
    try:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=READYZ_REDIS_TIMEOUT, socket_timeout=READYZ_REDIS_TIMEOUT
        )
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        logger.warning("readyz: redis check failed", exc_info=True)
        return False
    return True


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready to take traffic: the database answers a query and Redis (when configured) answers PING.
    503 names the failing check, never a host, URL or error text (those go to the log)."""
    checks = {"database": "ok" if _database_ready() else "unavailable"}
    if settings.REDIS_URL:
        checks["redis"] = "ok" if _redis_ready(settings.REDIS_URL) else "unavailable"
    else:
        checks["redis"] = "not_configured"  # the embedded run: nothing to wait for
    ready = all(value != "unavailable" for value in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks}, status=200 if ready else 503
    )


@csrf_exempt  # also routed for unknown /api/ paths, whatever the method
def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """JSON 404 for any URL without a route, in the API's one error shape."""
    return JsonResponse(messages.body("not_found", "no such resource"), status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    """JSON 500 in the API's error shape; the cause goes to the log, never to the client."""
    return JsonResponse(messages.body("server_error", "internal error"), status=500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """JSON 400 for what Django refuses before a view answers (an oversized chunked body, a bad host)."""
    if isinstance(exception, RequestDataTooBig):
        return too_large(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)
    return JsonResponse(messages.body("malformed_request", "bad request"), status=400)


def csrf_failure(request: HttpRequest, reason: str = "") -> JsonResponse:
    """JSON 403 for a cookie-authenticated form without its CSRF token (only the admin uses
    cookies; the API authenticates with bearer tokens and is exempt)."""
    return JsonResponse(messages.body("csrf_failed", "CSRF verification failed"), status=403)
