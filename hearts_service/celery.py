"""The Celery app that runs bot moves and turn clocks, configured from the Django settings."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

app = Celery("hearts_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
