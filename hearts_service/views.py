"""Project-level views that are not about any one game, such as the probe load balancers poll."""

from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    """Answer without touching the database, so a probe reports the process alive while the DB is down."""
    return JsonResponse({"status": "ok"})


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """JSON 404 for any URL without a route, in the API's one error shape."""
    return JsonResponse({"code": "not_found", "detail": "no such resource"}, status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    """JSON 500 in the API's error shape; the cause goes to the log, never to the client."""
    return JsonResponse({"code": "server_error", "detail": "internal error"}, status=500)
