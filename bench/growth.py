"""Storage that stays flat: bytes per finished game (hot rows, sealed, archived) and whether a play, a
table list, a leaderboard and an export slow down once a database holds a million finished games.

The N finished games are copies of P games the engine played through the services (random bots,
four players, to 100), bulk-inserted by COPY with fresh ids, apps, players and times: table lists,
"my tables", leaderboards and exports query realistic volumes, not P distinct games.
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import importlib
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# bench/graphql.py is named like the `graphql` package: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # stdout holds the figures, not every request's log line

APPS = 50  # apps sharing the service; their sizes follow 1/rank, so app 0 has about a fifth of it all
PLAYERS = 200_000  # players over all apps (fewer for a small run: one per five games, at least 1,000)
REGULAR_SHARE = 1 / 1000  # the measured player sits at one game in a thousand (a regular, over years)
PERSON_SEAT = 0.75  # each seat of a copied game is a person with this chance, else the pool game's bot
YEARS = 3  # the copies' times spread over this many years, in id order
FAMILY = "classic-4"

GAME_TABLES = ("games_table", "games_seat", "games_gamerecord", "games_move", "games_hand", "games_scorerow")
HOT = ("games_table", "games_seat", "games_move", "games_hand", "games_scorerow")


def refuse(message: str) -> None:
    sys.stderr.write(f"growth.py: {message}\n")
    raise SystemExit(2)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=1_000_000, help="finished games to fill (N)")
    parser.add_argument("--pool", type=int, default=1_000, help="distinct engine-played games (P)")
    parser.add_argument(
        "--requests",
        type=int,
        default=None,
        help="timed requests of each kind, per phase (default: games/100, 50 to 300)",
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    if args.games < 1 or args.pool < 4:
        parser.error("--games must be at least 1 and --pool at least 4")
    if args.requests is None:
        args.requests = min(300, max(50, args.games // 100))
    return args


def scratch_database() -> tuple[str, str]:
    """The scratch database's name and URL, beside DATABASE_URL's (which must be PostgreSQL)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        refuse(
            "the figures are about PostgreSQL: set DATABASE_URL=postgres://user@host:port/db "
            "(the benchmark creates and drops a database growth_<pid> on that server; SQLite is refused)"
        )
    name = f"growth_{os.getpid()}"
    parts = urlsplit(url)
    return name, urlunsplit(parts._replace(path=f"/{name}"))


ARGS = arguments() if __name__ == "__main__" else None
if __name__ == "__main__":
    DB_NAME, DB_URL = scratch_database()
    SERVER_URL = os.environ["DATABASE_URL"]
    os.environ["DATABASE_URL"] = DB_URL
    # Archives are files: a folder of this run's, removed at the end.
    DATA_DIR = tempfile.mkdtemp(prefix="growth-")
    os.environ["DATA_DIR"] = DATA_DIR

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from celery import current_app  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import override_settings, setup_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.request import Request  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from games import accounts, services  # noqa: E402
from games.api.auth import IsPrincipal  # noqa: E402
from games.models import App, Player, Rating, Table  # noqa: E402
from games.paging import PAGE_SIZE as PAGE  # noqa: E402

NO_CLOCKS = {"pass": None, "play": None, "moon": None}


@dataclass(frozen=True)
class Records:
    """What the benchmark calls of games.records."""

    seal: Callable[[int], bool]
    archive: Callable[[int], bool]


def records_api() -> Records | None:
    """games.records' seal and archive, or None where they do not exist (older trees)."""
    try:
        sealing = importlib.import_module("games.records.seal")
        archiving = importlib.import_module("games.records.archive")
    except ImportError:
        return None
    return Records(seal=sealing.seal, archive=archiving.archive)


# -- the database ------------------------------------------------------------------------------


def admin(sql: str) -> None:
    """A statement on the server's maintenance database (CREATE / DROP DATABASE)."""
    parts = urlsplit(SERVER_URL)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(sql)


def raw() -> Any:
    """The psycopg connection under Django's (COPY streams through it)."""
    connection.ensure_connection()
    return connection.connection


def sizes(tables: Sequence[str] = GAME_TABLES) -> dict[str, int]:
    """Bytes of each table with its indexes and TOAST."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname = ANY(%s)",
            [list(tables)],
        )
        return dict(cur.fetchall())


def compact_sizes(ids: Sequence[int]) -> dict[str, int]:
    """Bytes these tables' rows take in each game table with its indexes and TOAST, copied into
    fresh tables made LIKE it (INCLUDING ALL: the same indexes): no dead row versions counted,
    whatever VACUUM may reclaim on a shared server (another session's snapshot holds them)."""
    out = {}
    with connection.cursor() as cur:
        for name in GAME_TABLES:
            key = "id" if name == "games_table" else "table_id"
            cur.execute(f"CREATE TEMP TABLE measured (LIKE {name} INCLUDING ALL)")
            cur.execute("SELECT pg_total_relation_size('measured')")
            empty = int(cur.fetchone()[0])  # the empty table's and indexes' first pages
            cur.execute(f"INSERT INTO measured SELECT * FROM {name} WHERE {key} = ANY(%s)", [list(ids)])
            cur.execute("SELECT pg_total_relation_size('measured')")
            out[name] = int(cur.fetchone()[0]) - empty
            cur.execute("DROP TABLE measured")
    return out


def execute(sql: str) -> None:
    with connection.cursor() as cur:
        cur.execute(sql)


def columns(table: str) -> list[str]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
            "ORDER BY ordinal_position",
            [table],
        )
        return [r[0] for r in cur.fetchall()]


def dump(table: str, where: str) -> list[list[str]]:
    """The rows as COPY's text format has them: one list of escaped fields per row."""
    out = bytearray()
    query = f"COPY (SELECT * FROM {table} WHERE {where} ORDER BY 1) TO STDOUT"
    with raw().cursor() as cur, cur.copy(query) as copy:
        for chunk in copy:
            out += chunk
    return [line.split("\t") for line in out.decode().split("\n") if line]


class Writer:
    """COPY FROM in chunks, on a connection and a thread of its own: while PostgreSQL writes one
    chunk (one transaction: the tables in order, so that foreign keys hold at its commit), this
    process builds the next."""

    CHUNK = 8 << 20  # bytes of lines per chunk

    def __init__(self, order: Sequence[str]) -> None:
        self.order = list(order)
        self.columns = {name: columns(name) for name in order}
        self.lines: dict[str, list[str]] = {name: [] for name in order}
        self.size = 0
        self.rows = 0
        self.queue: queue.Queue[dict[str, str] | None] = queue.Queue(maxsize=2)
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, table: str, fields: Sequence[str]) -> None:
        line = "\t".join(fields) + "\n"
        self.lines[table].append(line)
        self.size += len(line)
        self.rows += 1
        if self.size > self.CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.failure is not None:
            raise RuntimeError("the COPY thread failed") from self.failure
        if self.size:
            self.queue.put({name: "".join(lines) for name, lines in self.lines.items() if lines})
            self.lines = {name: [] for name in self.order}
            self.size = 0

    def close(self) -> int:
        self.flush()
        self.queue.put(None)
        self.thread.join()
        if self.failure is not None:
            raise RuntimeError("the COPY thread failed") from self.failure
        return self.rows

    def _run(self) -> None:
        try:
            with psycopg.connect(DB_URL) as conn:
                while (chunk := self.queue.get()) is not None:
                    with conn.transaction(), conn.cursor() as cur:
                        for name in self.order:
                            if name in chunk:
                                names = ", ".join(self.columns[name])
                                with cur.copy(f"COPY {name} ({names}) FROM STDIN") as copy:
                                    copy.write(chunk[name].encode())
        except BaseException as exc:  # handed to the builder, which stops at its next flush
            self.failure = exc
            while self.queue.get() is not None:
                pass


def text(value: str) -> str:
    """A value escaped for COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def untext(field: str) -> str:
    """A field of COPY's text format as the value it stands for (the escapes `text` writes)."""
    escapes = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m[1], m[1]), field)


def reserve(table: str, count: int) -> int:
    """The first of `count` fresh ids of `table`'s id sequence, taken at once."""
    with connection.cursor() as cur:
        cur.execute(f"SELECT pg_get_serial_sequence('{table}', 'id')")
        sequence = cur.fetchone()[0]
        cur.execute("SELECT nextval(%s)", [sequence])
        first = int(cur.fetchone()[0])
        cur.execute("SELECT setval(%s, %s)", [sequence, first + count])
        return first


def iso(moment: dt.datetime) -> str:
    return moment.isoformat()


# -- the pool: games the engine played through the services ------------------------------------


def play_pool(app: App, count: int) -> list[int]:
    """`count` tables of four random bots to 100, created through games.services and played by the
    in-process bot runner (tasks run in this process, as `manage.py simulate` without Redis)."""
    ids = []
    for _ in range(count):
        out = services.table_create(
            options={"players": 4, "variant": "classic", "target_score": 100},
            bots=dict.fromkeys(range(4), "random"),
            clocks=NO_CLOCKS,
            app=app,
        )
        assert out.table is not None
        ids.append(out.table.pk)
    finished = Table.objects.filter(pk__in=ids, status=Table.Status.FINISHED).count()
    if finished != count:
        raise RuntimeError(f"only {finished} of {count} pool games finished")
    return ids


@dataclass
class Template:
    """One pool game's rows (COPY text fields), to copy with fresh ids."""

    table: list[str]
    seating: list[dict[str, Any]]
    related: dict[str, list[list[str]]] = field(default_factory=dict)


RELATED = ("games_seat", "games_gamerecord", "games_move", "games_hand", "games_scorerow")


def templates(ids: Sequence[int]) -> list[Template]:
    where = f"id IN ({', '.join(map(str, ids))})"
    on = f"table_id IN ({', '.join(map(str, ids))})"
    table_cols = columns("games_table")
    seating = table_cols.index("seating")
    out = {int(row[0]): Template(row, json.loads(untext(row[seating]))) for row in dump("games_table", where)}
    for name in RELATED:
        index = columns(name).index("table_id")
        for row in dump(name, on):
            out[int(row[index])].related.setdefault(name, []).append(row)
    return [out[i] for i in ids]


def save_rows(ids: Sequence[int]) -> dict[str, list[list[str]]]:
    """Every row of these tables as they are (to put them back, same ids, after the truncation)."""
    listed = ", ".join(map(str, ids))
    rows = {"games_table": dump("games_table", f"id IN ({listed})")}
    for name in RELATED:
        rows[name] = dump(name, f"table_id IN ({listed})")
    return rows


def restore_rows(rows: dict[str, list[list[str]]]) -> None:
    writer = Writer(("games_table", *RELATED))
    for name, lines in rows.items():
        for row in lines:
            writer.add(name, row)
    writer.close()


# -- the fill --------------------------------------------------------------------------------


def app_weights() -> list[float]:
    return [1 / (rank + 1) for rank in range(APPS)]


def fill_players(apps: list[int], count: int, rng: random.Random) -> list[range]:
    """`count` players spread over the apps like their games, each with a rating; the id range
    of each app's players."""
    weights = app_weights()
    total = sum(weights)
    per_app = [max(4, int(count * w / total)) for w in weights]
    first = reserve("games_player", sum(per_app))
    rating_first = reserve("games_rating", sum(per_app))
    now = timezone.now()
    ranges = []
    next_id = first
    pcols, rcols = columns("games_player"), columns("games_rating")
    writer = Writer(("games_player", "games_rating"))
    for app, n in zip(apps, per_app, strict=True):
        ranges.append(range(next_id, next_id + n))
        for pid in range(next_id, next_id + n):
            values = {
                "id": str(pid),
                "app_id": str(app),
                "name": f"player{pid}",
                "external_id": f"ext-{pid}",
                "language": "",
                "erased_at": "\\N",
                "created_at": iso(now),
            }
            writer.add("games_player", [values[c] for c in pcols])
        next_id += n
    rid = rating_first
    for app, span in zip(apps, ranges, strict=True):
        for pid in span:
            mu = rng.gauss(25.0, 6.0)
            sigma = rng.uniform(1.0, 8.3)
            values = {
                "id": str(rid),
                "app_id": str(app),
                "player_id": str(pid),
                "family": FAMILY,
                "mu": repr(mu),
                "sigma": repr(sigma),
                "score": repr(mu - 3 * sigma),
                "games": str(rng.randint(1, 200)),
                "updated_at": iso(now),
            }
            writer.add("games_rating", [values[c] for c in rcols])
            rid += 1
    writer.close()
    return ranges


def fill_games(
    pool: list[Template],
    count: int,
    apps: list[int],
    players: list[range],
    regular: int,
    rng: random.Random,
) -> int:
    """`count` copies of the pool's games with fresh ids, apps, people and times; the rows written."""
    table_cols = columns("games_table")
    tcol = {name: table_cols.index(name) for name in table_cols}
    related_cols = {name: columns(name) for name in RELATED}
    related_index = {name: {c: i for i, c in enumerate(cols)} for name, cols in related_cols.items()}
    per_game = {name: max(len(t.related.get(name, [])) for t in pool) for name in RELATED}
    first_table = reserve("games_table", count)
    first_id = {
        name: reserve(name, count * per_game[name])
        for name in RELATED
        if per_game[name] and "id" in related_cols[name]
    }
    app_of = rng.choices(range(APPS), weights=app_weights(), k=count)
    regular_chance = min(1.0, REGULAR_SHARE * sum(app_weights()) / app_weights()[0])
    span = YEARS * 365 * 86400
    start = timezone.now() - dt.timedelta(seconds=span + 86400)
    writer = Writer(("games_table", *[name for name in RELATED if per_game[name]]))
    next_id = dict(first_id)
    for i in range(count):
        template = pool[i % len(pool)]
        table_id = first_table + i
        app = app_of[i]
        created = start + dt.timedelta(seconds=span * i / count + rng.uniform(0, 60))
        finished = created + dt.timedelta(seconds=rng.uniform(600, 2400))
        people: dict[int, int] = {}
        span_players = players[app]
        for position in range(len(template.seating)):
            if position == 0 and app == 0 and rng.random() < regular_chance:
                people[position] = regular
            elif rng.random() < PERSON_SEAT:
                pid = span_players[rng.randrange(len(span_players))]
                if pid not in people.values() and pid != regular:
                    people[position] = pid
        seating = []
        for seat in template.seating:
            seat = dict(seat)
            person = people.get(seat["position"])
            if person is not None:
                seat.update(player=person, name=f"player{person}", bot=None)
            seating.append(seat)
        row = list(template.table)
        row[tcol["id"]] = str(table_id)
        row[tcol["app_id"]] = str(apps[app])
        row[tcol["seating"]] = text(json.dumps(seating))
        row[tcol["created_at"]] = iso(created)
        row[tcol["updated_at"]] = iso(finished)
        row[tcol["finished_at"]] = iso(finished)
        writer.add("games_table", row)
        for name, template_rows in template.related.items():
            index = related_index[name]
            for source in template_rows:
                out = list(source)
                out[index["table_id"]] = str(table_id)
                if "id" in index:
                    out[index["id"]] = str(next_id[name])
                    next_id[name] += 1
                if name == "games_seat":
                    person = people.get(int(source[index["position"]]))
                    if person is not None:
                        out[index["player_id"]] = str(person)
                        out[index["bot_level"]] = ""
                if name == "games_gamerecord":
                    out[index["created_at"]] = iso(finished + dt.timedelta(seconds=60))
                writer.add(name, out)
    return writer.close()


# -- the requests --------------------------------------------------------------------------------


class BareRead(APIView):
    """The baseline, interleaved with every kind in both phases: authenticated like the API, one
    row read by its key. Its cost does not grow with the database, so the machine's own drift
    between the two phases (a shared VM) shows in its ratio, and the `_vs_bare` ratios take it out."""

    permission_classes = [IsPrincipal]

    def get(self, request: Request, table_id: int) -> Response:
        return Response({"version": Table.objects.filter(pk=table_id).values_list("version").first()})


urlpatterns = [
    path("api/v1/", include("games.api.urls")),
    path("bare/<int:table_id>", BareRead.as_view()),
]


def client(token: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


class Game:
    """A table of four people of the measured app (the regular first), played by REST as
    bench/api.py plays: `play` times one card played through POST /actions."""

    def __init__(self, tokens: list[str], rng: random.Random) -> None:
        self.rng, self.tokens = rng, tokens
        made = client(tokens[0]).post("/api/v1/tables", {"options": {}}, format="json")
        assert made.status_code == 201, made.content
        self.table = made.json()["id"]
        for token in tokens:
            client(token).post(f"/api/v1/tables/{self.table}/join", {}, format="json")
        self.seats = {client(t).get(f"/api/v1/tables/{self.table}").json()["your_seat"]: t for t in tokens}

    def step(self) -> tuple[APIClient, dict[str, Any], bool] | None:
        body = client(self.tokens[0]).get(f"/api/v1/tables/{self.table}").json()
        if body["status"] == "finished":
            return None
        seat = self.rng.choice(body["game"]["to_act"])
        who = client(self.seats[seat])
        legal = who.get(f"/api/v1/tables/{self.table}").json()["game"]["legal_actions"]
        if legal["type"] == "pass":
            return who, {"type": "pass", "cards": legal["from"][:3]}, False
        if legal["type"] == "moon":
            return who, {"type": "moon", "choice": "subtract"}, False
        return who, {"type": "play", "card": self.rng.choice(legal["cards"])}, True


@dataclass
class Actors:
    app_key: str
    tokens: list[str]  # the regular's first
    sealed: list[int]
    archived: list[int]
    rng: random.Random
    game: Game | None = None

    def play(self) -> float:
        while True:
            if self.game is None:
                self.game = Game(self.tokens, self.rng)
            step = self.game.step()
            if step is None:
                self.game = None
                continue
            who, action, is_play = step
            start = time.perf_counter()
            r = who.post(f"/api/v1/tables/{self.game.table}/actions", action, format="json")
            elapsed = time.perf_counter() - start
            assert r.status_code == 200, r.content
            if is_play:
                return elapsed


def timed(get: Callable[[], Any]) -> float:
    start = time.perf_counter()
    response = get()
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.content[:500]
    return elapsed


def kinds(actors: Actors, records: bool) -> dict[str, Callable[[], float]]:
    """What is timed, each a callable answering the seconds of one request."""
    app = client(actors.app_key)
    regular = client(actors.tokens[0])
    sealed, archived = iter_forever(actors.sealed), iter_forever(actors.archived)
    bare = f"/bare/{actors.sealed[0]}"
    out: dict[str, Callable[[], float]] = {
        "bare": lambda: timed(lambda: app.get(bare)),
        "play": actors.play,
        "table_list": lambda: timed(lambda: app.get("/api/v1/tables")),
        "lobby": lambda: timed(lambda: regular.get("/api/v1/tables?status=open")),
        "my_tables": lambda: timed(lambda: regular.get("/api/v1/tables?mine=true")),
        "leaderboard": lambda: timed(lambda: app.get(f"/api/v1/leaderboard?family={FAMILY}")),
        "export": lambda: timed(lambda: app.get(f"/api/v1/tables/{next(sealed)}/export")),
    }
    if records and actors.archived:
        out["export_archived"] = lambda: timed(lambda: app.get(f"/api/v1/tables/{next(archived)}/export"))
    return out


def iter_forever(ids: list[int]) -> Iterator[int]:
    while True:
        yield from ids


def measure(actors: Actors, records: bool, count: int) -> dict[str, list[float]]:
    """`count` timed requests of each kind, the kinds interleaved, after a few untimed."""
    todo = kinds(actors, records)
    for run in todo.values():
        for _ in range(3):
            run()
    times: dict[str, list[float]] = {name: [] for name in todo}
    for _ in range(count):
        for name, run in todo.items():
            times[name].append(run())
    return times


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def figure(name: str, value: float, digits: int = 2) -> None:
    print(f"{name}: {value:.{digits}f}", flush=True)


# -- the run ---------------------------------------------------------------------------------------


def setup_actors(app: App, rng: random.Random) -> Actors:
    secret = accounts.key_create(app, name="growth", scopes=[accounts.Scope.admin])[1]
    tokens = []
    for i in range(4):
        player, token = accounts.player_create(app=app, name=f"regular{i}")
        Rating.objects.create(
            app=app, player=player, family=FAMILY, mu=25.0 + i, sigma=3.0, score=16.0 + i, games=10
        )
        tokens.append(token)
    # A page of open tables (paging.PAGE_SIZE rows), each with a waiting player and the regular
    # seated, and a page of ratings: the empty database's lists answer full pages, as at N games.
    for i in range(PAGE):
        player, token = accounts.player_create(app=app, name=f"waiting{i}")
        Rating.objects.create(
            app=app, player=player, family=FAMILY, mu=20.0 + i / 10, sigma=4.0, score=8.0 + i / 10, games=3
        )
        made = client(token).post("/api/v1/tables", {"options": {}}, format="json")
        assert made.status_code == 201, made.content
        for seated in (token, tokens[0]):
            joined = client(seated).post(f"/api/v1/tables/{made.json()['id']}/join", {}, format="json")
            assert joined.status_code == 200, joined.content
    return Actors(secret, tokens, [], [], rng)


def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    records = records_api()
    print(f"# scratch database {DB_NAME} (dropped at the end)", flush=True)
    print(f"games: {args.games}", flush=True)
    print(f"pool_games: {args.pool}", flush=True)
    print(f"records_api: {int(records is not None)}", flush=True)
    print(
        f"# the {args.games} finished games are copies of {args.pool} engine-played games "
        "(random bots, 4 players, to 100) with fresh ids, apps, players and times",
        flush=True,
    )
    App.objects.bulk_create([App(name=f"app {i}") for i in range(APPS)])
    apps = list(App.objects.order_by("pk").values_list("pk", flat=True))
    big = App.objects.get(pk=apps[0])

    # 1. The pool, played as the service plays; its rows measured as written afresh.
    started = time.perf_counter()
    # The bots move in this process, as `manage.py simulate` without Redis. Celery reads a setting
    # under its CELERY_ name before its own: both are set.
    for name in ("task_always_eager", "task_eager_propagates"):
        current_app.conf[name] = current_app.conf[f"CELERY_{name.upper()}"] = True
    pool_ids = play_pool(big, args.pool)
    figure("pool_seconds", time.perf_counter() - started, 1)
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM games_move WHERE table_id = ANY(%s)", [pool_ids])
        figure("pool_moves_per_game", cur.fetchone()[0] / args.pool, 1)
    hot = compact_sizes(pool_ids)
    figure("bytes_per_game_hot_rows", sum(hot[t] for t in HOT) / args.pool, 0)
    figure("bytes_per_game_hot_move_log", hot["games_move"] / args.pool, 0)

    # 2. Sealed, then a sample archived: what a finished game costs after each step.
    archived_ids: list[int] = []
    sample = pool_ids[: min(len(pool_ids) // 2, 50)]
    if records is not None:
        with override_settings(SEAL_AFTER_SECONDS=0):
            sealed = sum(bool(records.seal(t)) for t in pool_ids)
        figure("pool_sealed", sealed, 0)
        after = compact_sizes(pool_ids)
        figure("bytes_per_game_sealed_pool", sum(after.values()) / args.pool, 0)
        with override_settings(ARCHIVE_AFTER_DAYS=0):
            for table_id in sample:
                records.archive(table_id)
        storage = django_storage("archives")
        archived = Table.objects.filter(pk__in=sample).exclude(archive="")
        files = [storage.size(t.archive) for t in archived]
        archived_ids = [t.pk for t in archived]
        figure("archived_sample", len(files), 0)
        if files:
            figure("bytes_per_game_archived", sum(files) / len(files), 0)
    templates_ids = [t for t in pool_ids if t not in archived_ids]
    pool = templates(templates_ids)
    export_sealed = templates_ids[:5]
    kept = save_rows(export_sealed + archived_ids[:5])

    # 3. The empty database: nothing but the live tables and the few finished games exported.
    execute("TRUNCATE games_table CASCADE")
    restore_rows(kept)
    actors = setup_actors(big, rng)
    actors.sealed, actors.archived = export_sealed, archived_ids[:5]
    execute("ANALYZE")
    empty = measure(actors, records is not None, args.requests)

    # 4. The fill: players with ratings, then N copies by COPY, indexes in place.
    before = sizes()
    started = time.perf_counter()
    regular = Player.objects.get(name="regular0").pk
    ranges = fill_players(apps, min(PLAYERS, max(1_000, args.games // 5)), rng)
    player_rows = sum(len(r) for r in ranges) * 2
    game_rows = fill_games(pool, args.games, apps, ranges, regular, rng)
    elapsed = time.perf_counter() - started
    figure("fill_seconds", elapsed, 1)
    figure("fill_rows", player_rows + game_rows, 0)
    figure("fill_rows_per_s", (player_rows + game_rows) / elapsed, 0)
    figure("fill_games_per_s", args.games / elapsed, 0)
    started = time.perf_counter()
    execute("ANALYZE")
    figure("analyze_seconds", time.perf_counter() - started, 1)
    grown = sizes()
    figure(
        "bytes_per_game_sealed" if records else "bytes_per_game_filled",
        sum(grown[t] - before[t] for t in grown) / args.games,
        0,
    )
    with connection.cursor() as cur:
        cur.execute("SELECT pg_database_size(current_database())")
        figure("database_bytes", cur.fetchone()[0], 0)
        cur.execute("SELECT count(*) FROM games_seat WHERE player_id = %s", [regular])
        figure("regular_tables", cur.fetchone()[0], 0)
        cur.execute("SELECT count(*) FROM games_table WHERE app_id = %s", [apps[0]])
        figure("app_tables", cur.fetchone()[0], 0)
        cur.execute("SELECT count(*) FROM games_rating WHERE app_id = %s", [apps[0]])
        figure("app_ratings", cur.fetchone()[0], 0)

    # 5. The same requests at N games.
    full = measure(actors, records is not None, args.requests)
    figure("requests_per_kind", args.requests, 0)
    drift = {q: quantile(full["bare"], q) / quantile(empty["bare"], q) for q in (0.5, 0.99)}
    for name in empty:
        ratio = {q: quantile(full[name], q) / quantile(empty[name], q) for q in (0.5, 0.99)}
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            figure(f"{name}_{label}_ms_empty", quantile(empty[name], q) * 1000)
            figure(f"{name}_{label}_ms", quantile(full[name], q) * 1000)
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            figure(f"{name}_{label}_ratio", ratio[q])
            if name != "bare":
                figure(f"{name}_{label}_ratio_vs_bare", ratio[q] / drift[q])


def django_storage(name: str) -> Any:
    from django.core.files.storage import storages

    return storages[name]


def main() -> None:
    assert ARGS is not None
    setup_test_environment()
    admin(f'CREATE DATABASE "{DB_NAME}"')
    # Stopped by a signal, it still drops its database (the `finally` below runs).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    atexit.register(shutil.rmtree, DATA_DIR, True)
    try:
        call_command("migrate", verbosity=0)
        # Rate limits off (as bench/api.py): hundreds of requests a second from one token.
        with override_settings(ROOT_URLCONF=__name__, RATE_LIMITS_ENABLED=False):
            run(ARGS)
    finally:
        connection.close()
        admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


if __name__ == "__main__":
    main()
