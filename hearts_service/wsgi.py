"""WSGI entry point for synchronous application servers such as gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

application = get_wsgi_application()

from hearts_service import tracing  # noqa: E402  (reads the settings: once Django is set up)

tracing.setup("web")  # off unless the OTEL_* variables say so (docs/operations.md#traces)
