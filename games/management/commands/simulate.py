"""`manage.py simulate`: bot-only tables created through the services and played to the end."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from bots import LEVELS
from games import services
from games.errors import ServiceError
from games.models import Move, Table

NO_CLOCKS = {"pass": None, "play": None, "moon": None}


def progress(done: int, total: int, moves: int, started: float) -> None:
    """One line, redrawn: a bar, tables finished, and moves so far."""
    width = 30
    filled = width * done // max(total, 1)
    elapsed = time.perf_counter() - started
    sys.stderr.write(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} tables, {moves} moves, {elapsed:.1f}s"
    )
    sys.stderr.flush()


class Command(BaseCommand):
    help = (
        "Create bot-only tables through games.services and run them to the end (by the Celery "
        "workers when REDIS_URL is set, in-process otherwise); report games/min and moves/s."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tables", type=int, default=10)
        parser.add_argument(
            "--bots",
            default="basic,basic,basic,basic",
            help=f"One level per seat, comma-separated ({', '.join(LEVELS)}); the count is the player count",
        )
        parser.add_argument("--variant", default="classic")
        parser.add_argument("--target", type=int, default=100, help="Target score")
        parser.add_argument("--timeout", type=float, default=900, help="Give up after this many seconds")

    def handle(self, *args: Any, **opts: Any) -> None:
        levels = [level.strip() for level in opts["bots"].split(",") if level.strip()]
        if any(level not in LEVELS for level in levels):
            raise CommandError(f"--bots takes levels from {', '.join(LEVELS)}")
        options = {"players": len(levels), "variant": opts["variant"], "target_score": opts["target"]}
        total, started = opts["tables"], time.perf_counter()
        ids: list[int] = []
        try:
            for _ in range(total):
                out = services.table_create(options=options, bots=dict(enumerate(levels)), clocks=NO_CLOCKS)
                assert out.table is not None
                ids.append(out.table.pk)
                progress(self._finished(ids), total, self._moves(ids), started)
        except ServiceError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        while (done := self._finished(ids)) < total:
            if time.perf_counter() - started > opts["timeout"]:
                raise CommandError(f"only {done} of {total} tables finished in {opts['timeout']}s")
            progress(done, total, self._moves(ids), started)
            time.sleep(0.25)
        elapsed = time.perf_counter() - started
        moves = self._moves(ids)
        progress(total, total, moves, started)
        sys.stderr.write("\n")
        self.stdout.write(f"games: {total}")
        self.stdout.write(f"moves: {moves}")
        self.stdout.write(f"seconds: {elapsed:.2f}")
        self.stdout.write(f"games_per_min: {total / elapsed * 60:.1f}")
        self.stdout.write(f"moves_per_s: {moves / elapsed:.1f}")

    @staticmethod
    def _finished(ids: list[int]) -> int:
        return Table.objects.filter(pk__in=ids, status=Table.Status.FINISHED).count()

    @staticmethod
    def _moves(ids: list[int]) -> int:
        return Move.objects.filter(table_id__in=ids, kind__in=["pass", "play", "moon"]).count()
