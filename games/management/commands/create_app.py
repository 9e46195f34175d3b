"""`manage.py create_app NAME [--scopes ...] [--key-name ...]`: register an integrating app and print
its first API key once (with every scope unless --scopes names fewer), or `--app ID` to add a key
to an existing app (an operator's way back in when every key of an app is lost)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from games import accounts
from games.errors import ServiceError
from games.models import App


class Command(BaseCommand):
    help = (
        "Create an integrating app and print its first API key (shown only this once); with --app, "
        "a new key of an existing app."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="The new app's name (not with --app)")
        parser.add_argument(
            "--scopes",
            default=accounts.Scope.admin.value,
            help="Comma-separated scopes of the key (default: admin, every scope): "
            + ", ".join(accounts.SCOPES),
        )
        parser.add_argument("--key-name", default="first key", help="The key's label")
        parser.add_argument("--app", type=int, help="Add a key to this existing app instead")

    def handle(self, *args: Any, **options: Any) -> None:
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        try:
            with transaction.atomic():  # no app without its key
                app = self._app(options)
                key, secret = accounts.key_create(app, name=options["key_name"], scopes=scopes)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"app {app.pk}: {app.name}\nAPI key {key.pk} ({', '.join(key.scopes)}), "
            f"store it now, it is not kept: {secret}"
        )

    @staticmethod
    def _app(options: dict[str, Any]) -> App:
        if options["app"] is not None:
            app = App.objects.filter(pk=options["app"]).first()
            if app is None:
                raise CommandError(f"no app {options['app']}")
            return app
        if not options["name"]:
            raise CommandError("give the new app's NAME, or --app ID")
        return App.objects.create(name=options["name"])
