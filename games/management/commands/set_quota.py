"""`manage.py set_quota APP_ID [--open-tables N] [--webhooks default] ...`: an operator sets an
app's own quotas (games/quotas.py; the admin does the same), recorded in the audit trail; with no
option it shows the app's quotas, their limits and what the app uses now."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from games import audit, quotas
from games.models import App, AppQuota


def _value(text: str) -> int | None:
    """A limit as given: a whole number of 0 or more, or `default` (the setting's)."""
    if text == "default":
        return None
    if not (text.isascii() and text.isdigit()):
        raise CommandError(f"a quota is a whole number of 0 or more, or 'default': not {text!r}")
    return int(text)


class Command(BaseCommand):
    help = (
        "Set an app's own quotas (each a whole number, or 'default' for the setting's); with none given, "
        "show its quotas, their limits and what it uses now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("app_id", type=int)
        for name in quotas.QUOTAS:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="N|default")

    def handle(self, *args: Any, **options: Any) -> None:
        app = App.objects.filter(pk=options["app_id"]).first()
        if app is None:
            raise CommandError(f"no app {options['app_id']}")
        wanted = {name: _value(options[name]) for name in quotas.QUOTAS if options.get(name) is not None}
        if wanted:
            with transaction.atomic():
                row, _ = AppQuota.objects.select_for_update().get_or_create(app=app)
                before = audit.snapshot(row, tuple(quotas.QUOTAS))
                for name, value in wanted.items():
                    setattr(row, name, value)
                row.save()
                audit.append(
                    app_id=app.pk,
                    actor_kind="operator",
                    actor=f"manage.py set_quota ({getpass.getuser()})",
                    action="set_quota",
                    target=f"appquota:{row.pk}",
                    changes=audit.diff(before, audit.snapshot(row, tuple(quotas.QUOTAS))),
                )
        limits, used = quotas.limits(app), quotas.used(app)
        for name in quotas.QUOTAS:
            now = f", {used[name]} used" if name in used else ""
            self.stdout.write(f"{name}: {limits[name]}{now}")
