"""`manage.py tournament`: the bot tournament of `bots.tournament`, from the project's command line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from bots import tournament


class Command(BaseCommand):
    help = "One bot level against another on the same deals, the candidate in every seat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("args", nargs="*", help="Arguments of python -m bots.tournament, after --")

    def handle(self, *args: Any, **options: Any) -> None:
        tournament.main(list(args))
