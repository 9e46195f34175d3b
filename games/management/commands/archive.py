"""`manage.py archive`: move finished tables to the archive storage now, or bring one back (docs/data.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import games.records.archive as archive
from games.models import App, Table


class Command(BaseCommand):
    help = (
        "Archive the tables past their retention period (--due), one table (--table N), every finished "
        "table of an app whatever its age (--app N --all), or restore one (--restore N)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--due", action="store_true", help="what housekeeping would archive now")
        what.add_argument("--table", type=int, metavar="N", help="archive table N")
        what.add_argument("--restore", type=int, metavar="N", help="restore table N from its archive")
        what.add_argument("--app", type=int, metavar="N", help="with --all: every finished table of app N")
        parser.add_argument("--all", action="store_true", help="with --app: whatever their age")
        parser.add_argument("--limit", type=int, default=None, help="--due: at most this many tables")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["all"] != (opts["app"] is not None):
            raise CommandError("--app and --all go together")
        if opts["due"]:
            self.stdout.write(f"archived: {archive.archive_due(limit=opts['limit'])}")
        elif opts["table"] is not None:
            if not archive.archive(opts["table"]):
                raise CommandError(f"table {opts['table']} is not archivable (not over, or archived already)")
            self.stdout.write(f"archived: table {opts['table']}")
        elif opts["restore"] is not None:
            if not archive.restore(opts["restore"]):
                raise CommandError(f"table {opts['restore']} is not archived")
            self.stdout.write(f"restored: table {opts['restore']}")
        else:
            if not App.objects.filter(pk=opts["app"]).exists():
                raise CommandError(f"no app {opts['app']}")
            over = [Table.Status.FINISHED, Table.Status.ABANDONED]
            rows = Table.objects.filter(app_id=opts["app"], status__in=over, archived_at__isnull=True)
            done = sum(archive.archive(pk) for pk in rows.order_by("pk").values_list("pk", flat=True))
            self.stdout.write(f"archived: {done}")
