"""The Django project; the Celery app is imported here so that tasks bind to it whenever Django starts."""

from hearts_service.celery import app as celery_app

__all__ = ("celery_app",)
