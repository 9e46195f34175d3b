"""`manage.py app_data export APP_ID --out FILE` and `manage.py app_data delete APP_ID --yes`: an
operator's export of a whole app's data (JSON Lines, no secrets) and its deletion (docs/privacy.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from games.errors import ServiceError
from games.models import App
from games.services import exports


class Command(BaseCommand):
    help = (
        "An app's whole data: `export APP_ID --out FILE` writes it as JSON Lines (no key hash, secret, "
        "salt or token); `delete APP_ID --yes` deletes the app and everything of it, its archive and "
        "export files included."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        export = sub.add_parser("export", help="write the app's data to a JSON Lines file")
        export.add_argument("app_id", type=int)
        export.add_argument("--out", required=True, help="the file to write ('-': standard output)")
        delete = sub.add_parser("delete", help="delete the app and all its data, for good")
        delete.add_argument("app_id", type=int)
        delete.add_argument("--yes", action="store_true", help="confirm: nothing can bring it back")

    def handle(self, *args: Any, **options: Any) -> None:
        app_id: int = options["app_id"]
        if options["action"] == "export":
            app = App.objects.filter(pk=app_id).first()
            if app is None:
                raise CommandError(f"no app {app_id}")
            if options["out"] == "-":
                lines = exports.write_app_export(app, self.stdout)
            else:
                with open(options["out"], "w", encoding="utf-8") as out:
                    lines = exports.write_app_export(app, out)
                self.stderr.write(f"app {app_id}: {lines} lines written to {options['out']}")
            return
        if not options["yes"]:
            raise CommandError(f"deleting app {app_id} and all its data cannot be undone: add --yes")
        try:
            deleted = exports.delete_app(app_id)
        except ServiceError as exc:
            raise CommandError(f"no app {app_id}") from exc
        counts = ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in deleted.items())
        self.stdout.write(f"app {app_id} deleted: {counts}")
