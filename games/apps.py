"""Registers the games app with Django so its models, migrations and tasks are discovered."""

from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    verbose_name = "Hearts games"
