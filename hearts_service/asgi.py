"""ASGI entry point for asynchronous application servers such as uvicorn."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

application = get_asgi_application()
