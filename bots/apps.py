"""Registers the bots app with Django so its Celery tasks are discovered."""

from django.apps import AppConfig


class BotsConfig(AppConfig):
    name = "bots"
    verbose_name = "Hearts bots"
