"""The probe and scrape paths (/healthz, /readyz, /metrics) answer whatever Host they are sent with."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

# Prometheus and Kubernetes call a pod by its address, which is never in ALLOWED_HOSTS (Prometheus
# cannot set a Host header). These views build no URL from the host, so for them alone the host is
# replaced by one ALLOWED_HOSTS accepts before Django validates it; every other path keeps the check.
PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def allowed_host() -> str:
    """A host name ALLOWED_HOSTS accepts: its first entry (`.example.com` gives `example.com`)."""
    first = next(iter(settings.ALLOWED_HOSTS), "*")
    return "localhost" if first == "*" else first.lstrip(".")


class ProbeHost:
    """First in MIDDLEWARE: a probe's or scrape's Host becomes an allowed one, whatever it was."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.host = allowed_host()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path in PATHS:
            request.META["HTTP_HOST"] = self.host
            request.META.pop("HTTP_X_FORWARDED_HOST", None)
        return self.get_response(request)
