"""Duplicate tournaments: creating one and setting up its tables (a bulk task: a creation answers at
once), the bots' shared random stream at its tables, and advancing it as its tables finish (in each
finishing transaction, so racing finishes complete it exactly once)."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.dispatch import receiver
from django.utils import timezone

from games import standings
from games.engine import EngineError, Event, Options, duplicate, hand_seed, new_seed
from games.errors import ServiceError
from games.infra import jobs
from games.models import App, Move, Player, Seat, Table, Tournament
from games.services.common import Idempotency, Outcome, check_level, clocks_from, run
from games.services.record import game_ended, log, public, schedule, seated, start_if_full

MAX_DEAL_SETS = 200  # tables are deal sets times seats, all started at once when only bots play
MAX_SEED = 64
SET_UP_BATCH = 25  # tables created per transaction of a set-up (a short hold of the write lock)
SET_UP_GRACE = dt.timedelta(seconds=30)  # a set-up unfinished for longer lost its task (resume_set_ups)


def tournament_create(
    *,
    app: App,
    entrants: Sequence[Mapping[str, Any]],
    deal_sets: int,
    options: Mapping[str, Any] | None = None,
    clocks: Mapping[str, Any] | None = None,
    seed: str | int | None = None,
    name: str = "",
    idempotency: Idempotency | None = None,
) -> Outcome:
    """A new tournament of `app` (`Outcome.made`; with an Idempotency-Key seen before, the first
    answer instead). It answers at once, status `starting`: its tables are created by a task on the
    bulk lane (`set_up`), then it is `running`. Only bots: every table is created and started, on
    the bot lane. With people: the tables are played one after the other (each entrant sits at
    every table), the next one starting when one finishes, on the people's clocks."""
    try:
        opts = Options.from_dict(options or {})
    except EngineError as exc:
        raise ServiceError.from_engine(exc) from exc
    if opts.first_hand != 1 or opts.hands != 0:
        raise ServiceError(
            "invalid_option",
            "a tournament sets first_hand and hands of its tables itself",
            kind="malformed",
            option="first_hand" if opts.first_hand != 1 else "hands",
        )
    clock_set = clocks_from(clocks)
    if type(deal_sets) is not int or not 1 <= deal_sets <= MAX_DEAL_SETS:
        raise ServiceError(
            "invalid_input",
            f"deal_sets must be a whole number from 1 to {MAX_DEAL_SETS}",
            kind="malformed",
            field="deal_sets",
        )
    if seed is not None and (type(seed) not in (str, int) or not 1 <= len(str(seed)) <= MAX_SEED):
        raise ServiceError(
            "invalid_input", f"seed is 1 to {MAX_SEED} characters", kind="malformed", field="seed"
        )
    rows = _entrants(app, entrants, opts.players)

    def act() -> Outcome:
        tournament = Tournament.objects.create(
            app=app,
            name=name[:100],
            entrants=rows,
            options=opts.to_dict(),
            clocks=clock_set,
            deal_sets=deal_sets,
            seed=str(seed) if seed is not None else new_seed(),
            seed_given=seed is not None,
            tables_total=deal_sets * opts.players,
        )
        tournament.tables_created = 0  # type: ignore[attr-defined]  # standings.body shows it
        transaction.on_commit(partial(jobs.set_up_tournament, tournament.pk))
        return Outcome(None, made=tournament)

    return run(act, idempotency)


def created_answer(out: Outcome) -> tuple[int, str]:
    """The answer kept for a creation's Idempotency-Key (both APIs): the tournament as created."""
    return 201, json.dumps(standings.body(out.made), separators=(",", ":"), ensure_ascii=False)


def _entrants(app: App, raw: Sequence[Mapping[str, Any]], players: int) -> list[dict[str, Any]]:
    """Validated entrants: each a player of the app or a bot level; 2 to `players` of them, and
    with fewer than `players` the last one (who fills the other seats) must be a bot."""

    def refuse(message: str) -> ServiceError:
        return ServiceError("invalid_input", message, kind="malformed", field="entrants")

    if not isinstance(raw, list | tuple) or not 2 <= len(raw) <= players:
        raise refuse(f"entrants is a list of 2 to {players} players or bot levels (one per seat at most)")
    rows: list[dict[str, Any]] = []
    for i, entrant in enumerate(raw):
        if not isinstance(entrant, Mapping) or len(entrant) != 1 or not {"player", "bot"} & set(entrant):
            raise refuse(f'entrant {i} must be {{"player": id}} or {{"bot": level}}')
        if "bot" in entrant:
            check_level(entrant["bot"])
            rows.append({"player": None, "bot": entrant["bot"], "name": f"{entrant['bot']} bot"})
            continue
        player_id = entrant["player"]
        person = Player.objects.filter(pk=player_id, app=app).first() if type(player_id) is int else None
        if person is None:
            raise refuse(f"entrant {i}: no player {player_id!r} of this app")
        if any(r["player"] == person.pk for r in rows):
            raise refuse(f"entrant {i}: player {person.pk} is entered twice")
        rows.append({"player": person.pk, "bot": None, "name": person.name})
    if len(rows) < players and rows[-1]["bot"] is None:
        raise refuse(f"with fewer than {players} entrants the last one fills several seats: it must be a bot")
    return rows


def _bots_only(tournament: Tournament) -> bool:
    return all(e["player"] is None for e in tournament.entrants)


def _order(tournament: Tournament) -> list[tuple[int, int]]:
    """(deal set, rotation) of its tables in the order they are created: rotation by rotation."""
    players = Options.from_dict(tournament.options).players
    return [(d, r) for r in range(players) for d in range(tournament.deal_sets)][
        : standings.tables_at_start(tournament)
    ]


def set_up(tournament_id: int, batch: int = SET_UP_BATCH) -> int:
    """Create and start the tables the tournament lacks, `batch` to a transaction (each under the
    tournament's row lock, so two deliveries of the task never create a table twice, and a worker
    killed half-way leaves whole batches: the task run again, or `resume_set_ups`, creates the
    rest). Returns how many it created. Each table's bot moves are queued on its commit."""
    made = 0
    while True:
        with transaction.atomic():
            tournament = Tournament.objects.select_for_update().filter(pk=tournament_id).first()
            if tournament is None or tournament.status != Tournament.Status.RUNNING:
                return made
            have = set(tournament.tables.values_list("deal_set", "rotation"))
            missing = [pair for pair in _order(tournament) if pair not in have]
            for deal_set, rotation in missing[:batch]:
                _open_table(tournament, deal_set, rotation)
            made += min(len(missing), batch)
        if len(missing) <= batch:
            return made


def unfinished_set_ups(grace: dt.timedelta = SET_UP_GRACE) -> list[int]:
    """Running tournaments created over `grace` ago that still lack tables of their set-up."""
    old = Tournament.objects.filter(
        status=Tournament.Status.RUNNING, created_at__lte=timezone.now() - grace
    ).annotate(tables_created=Count("tables"))
    return [t.pk for t in old if standings.status(t) == standings.STARTING]


def resume_set_ups() -> int:
    """The sweep's share (the safety net for a set-up task lost or killed mid-way): queue the
    set-up of each tournament still lacking tables SET_UP_GRACE after its creation; how many."""
    found = unfinished_set_ups()
    for tournament_id in found:
        jobs.set_up_tournament(tournament_id)
    return len(found)


def deal_set_seed(tournament: Tournament, deal_set: int) -> str:
    """A deal set's game seed: from the app's seed as bots.tournament derives it; from a secret seed
    through a MAC, so that the seed a finished table reveals tells nothing of the other deal sets."""
    base = tournament.seed if tournament.seed_given else hand_seed(tournament.seed, deal_set)
    return duplicate.deal_set_seed(base, deal_set)


def _open_table(tournament: Tournament, deal_set: int, rotation: int) -> Table:
    """Create, seat and start one table of the tournament (its bot moves queued on commit)."""
    opts = Options.from_dict(tournament.options)
    game_seed = deal_set_seed(tournament, deal_set)
    hand = duplicate.deal_set_hand(opts, deal_set)
    rng = random.Random(duplicate.rotation_rng_seed(game_seed, rotation))
    table = Table.objects.create(
        app=tournament.app,
        options=duplicate.hand_options(opts, hand).to_dict(),
        clocks=tournament.clocks,
        seed=game_seed,
        visibility="unlisted",
        tournament=tournament,
        deal_set=deal_set,
        rotation=rotation,
        bot_rng=rng_state(rng),
    )
    who = duplicate.seating(len(tournament.entrants), opts.players, rotation)
    entrants = tournament.entrants
    seats = Seat.objects.bulk_create(
        Seat(
            table=table,
            position=p,
            player_id=entrants[who[p]]["player"],
            bot_level=entrants[who[p]]["bot"] or "",
        )
        for p in range(opts.players)
    )
    announce = public("tournament_table", tournament=tournament.pk, deal_set=deal_set, rotation=rotation)
    for seat in seats:
        entrant = entrants[who[seat.position]]
        if entrant["bot"]:
            event = public("bot_added", seat=seat.position, level=entrant["bot"])
            log(table, Move.Kind.ADD_BOT, seat.position, {"level": entrant["bot"]}, [event])
        else:
            event = public("seat_taken", seat=seat.position, player=entrant["player"], name=entrant["name"])
            log(table, Move.Kind.JOIN, seat.position, {"player": entrant["player"]}, [event])
    for seat in seats:
        seat.player = Player.objects.get(pk=seat.player_id) if seat.player_id else None
    seated(table, seats)
    start_if_full(table, seats, [announce])
    table.save()
    schedule(table)
    return table


def shared_rng(table: Table) -> random.Random | None:
    """The random stream a tournament table's bots share, in the order they act (as bots.tournament
    plays a rotation); None at other tables, whose bots seed each move on its own."""
    if table.bot_rng is None:
        return None
    rng = random.Random()
    version, internal, gauss = table.bot_rng
    rng.setstate((version, tuple(internal), gauss))
    return rng


def rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


@receiver(game_ended)
def table_finished(sender: object, *, table: Table, totals: list[int] | None, **_: Any) -> list[Event]:
    """A table of a tournament ends (in its finishing transaction): count it under the tournament's
    row lock, so that of racing finishes exactly one sees the last table and finishes the
    tournament; with people, open the next table. Answers the events that go on the ending move.
    An abandoned table (`totals` None) counts too, so the tournament still ends: its deal set is
    left out of the standings, which take complete deal sets only."""
    if table.tournament_id is None:
        return []
    tournament = Tournament.objects.select_for_update().get(pk=table.tournament_id)
    tournament.tables_finished += 1
    events: list[Event] = []
    fields = ["tables_finished"]
    if tournament.tables_finished >= tournament.tables_total:
        tournament.status = Tournament.Status.FINISHED
        tournament.finished_at = timezone.now()
        # The ending table's scoresheet rows are written after this move: its points come along.
        assert table.deal_set is not None and table.rotation is not None
        ending = {} if totals is None else {(table.deal_set, table.rotation): totals}
        tournament.standings = standings.compute(tournament, ending)
        fields += ["status", "finished_at", "standings"]
    elif not _bots_only(tournament):
        index = tournament.tables_finished  # rotation-major: a deal comes back after all the others
        following = _open_table(tournament, index % tournament.deal_sets, index // tournament.deal_sets)
        events.append(public("tournament_next_table", tournament=tournament.pk, next_table=following.pk))
    tournament.save(update_fields=fields)
    progress = public(
        "tournament_progress",
        tournament=tournament.pk,
        tables_finished=tournament.tables_finished,
        tables_total=tournament.tables_total,
        status=tournament.status,
    )
    return [progress, *events]
