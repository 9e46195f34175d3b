"""Project-level views that are not about any one game, such as the probe load balancers poll."""

from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    """Answer without touching the database, so a probe reports the process alive while the DB is down."""
    return JsonResponse({"status": "ok"})
