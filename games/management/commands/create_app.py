"""`manage.py create_app NAME`: register an integrating app and print its API key once."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from games.accounts import app_create


class Command(BaseCommand):
    help = "Create an integrating app and print its API key (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        app, key = app_create(name=options["name"])
        self.stdout.write(f"app {app.pk}: {app.name}\nAPI key (store it now, it is not kept): {key}")
