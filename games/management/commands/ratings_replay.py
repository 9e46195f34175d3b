"""`manage.py ratings_replay`: recompute every rating from the rated games and compare exactly."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from games.services import ratings_replay


class Command(BaseCommand):
    help = "Recompute every rating from the finished rated games in order; fail on any difference."

    def handle(self, *args: Any, **options: Any) -> None:
        games, problems = ratings_replay()
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            raise CommandError(f"{len(problems)} difference(s) after replaying {games} rated game(s)")
        self.stdout.write(f"{games} rated game(s) replayed: every rating is exact")
