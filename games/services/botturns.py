"""The moves bots owe, built-in levels and the bots apps bring (`ext:<name>`, docs/bots-byo.md).

Built-in bots that decide at once (`random`, `basic`, seats marked away) move inside the table's
transaction (games.services.play.advance). Those that think (`strong`, `expert`, any level at a table
with `bot_think_ms`) decide before it, one move at a time, from the table read without a lock,
and the move is applied only if the table is still at that version: a thinking bot never holds the
row lock (on SQLite, the embedded run, the whole database's write lock) while it thinks. A brought bot is
asked over HTTP, and never while a transaction or the table's row lock is held: the task reads
the table without a lock, asks the bots of the seats to act (together, each within its own
`timeout_ms`, at most TIMEOUT_LIMITS' 3 seconds), then locks the table and applies the answers
only if the table is still at the version it asked about (else another task moved it on, and
the answers are dropped uncounted). A late, failing or illegal answer makes the `basic` bot move
instead, in that same transaction: the move's events begin with a public `bot_fallback` (the seat
and the reason, never a card) and the endpoint counts the reason.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from bots.strategy import decide
from games import bot_timing, extbots, reads
from games.engine import EngineError, Event, State, action_from_dict, state_from_dict, view
from games.infra import jobs, metrics
from games.models import Move, Table
from games.services import tournaments
from games.services.common import UNSCOPED, Outcome, locked
from games.services.play import BOT_FIELDS, TASK_THINKING_MS, advance
from games.services.record import (
    KIND_OF_ACTION,
    has_people,
    log,
    plays_itself,
    public,
    queue_tasks,
    schedule,
    store_state,
    write,
)

# Asks of brought bots per task on the bot lanes: one round (the seats that act at once), then the
# commit hands the table to a new task, so a worker waits for one bot's timeout at most per task
# and the lane's queue turns over between them. Eager runs (tests, the embedded run) ask on.
ASKS_PER_TASK = 1


def external_to_act(table: Table, state: State) -> list[int]:
    """The brought bots' seats to act now, when no other seat the server plays is due first
    (built-in bots and away seats move in the transaction, before any bot is asked)."""
    due = [s for s in state.to_act() if table.seating[s]["bot"] or table.seating[s].get("away")]
    external = [
        s for s in due if extbots.is_external(table.seating[s]["bot"]) and not table.seating[s].get("away")
    ]
    return external if len(external) == len(due) else []


def bots_play(
    *,
    table_id: int,
    version: int,
    limit: int | None = None,
    asks: int | None = ASKS_PER_TASK,
    first: Table | None = None,
) -> Outcome:
    """Every move owed by bots and seats marked away, as long as only they are to act, up to
    `limit` moves and `asks` rounds of asking brought bots (None: no limit); then, if moves are
    still owed, a new task on the table's lane. Each step is one transaction (each move its own
    entry in the log). A task queued for another version (stale, or delivered twice) does nothing.
    At a paced table (`bot_timing.pace_ms`) a task stops before a second card: the commit queues
    the next one after the pace. With a thinking time, a task makes at most as many moves as fit
    in TASK_THINKING_MS (far below its time limit). `first` is the table as `first_read` just
    read it (the caller looked at it already)."""
    made, rounds, caused = 0, 0, []
    last: Table | None = None
    more = False
    # Unread (None): the first step locks the table straight away and moves if its bots all
    # decide in the transaction (most tables), else it reads the table first (`first_read`).
    table = first if first is not None and first.pk == table_id else None
    unread = table is None
    while True:
        if unread:
            out, moved = _step(table_id, version, {}, limit, paced=None)
            unread = False
            if moved is None:  # a bot to ask or one that thinks: read the table, then decide
                table = first_read(table_id)
                continue
        else:
            if table is None or table.version != version or not table.bot_turn:
                break
            think = bot_timing.think_ms(table)
            most = limit if think is None or limit is None else min(limit, max(1, TASK_THINKING_MS // think))
            if most is not None and made >= most:
                more = True
                break
            out, moved, asked = _decide_and_step(table, table_id, version, most, made, asks, rounds)
            if moved is None:  # asked as often as a task may: the next task asks on
                more = True
                break
            rounds += asked
        if out.table is None or not moved:
            break
        last, version, made = out.table, out.table.version, made + moved
        caused += out.events
        if bot_timing.pace_ms(last) > 0:  # the commit queued the next card after the pace
            break
        table = last  # as this task left it: a change since is refused by _step's version check
    if more and last is not None:
        queue_tasks(
            last.pk, last.version, jobs.lane_of(people=has_people(last.seating), app_id=last.app_id or 0)
        )
    return Outcome(last, caused)


def _decide_and_step(
    table: Table, table_id: int, version: int, most: int | None, made: int, asks: int | None, rounds: int
) -> tuple[Outcome, int | None, int]:
    """One step from the unlocked read `table`: brought bots asked and a thinking bot's move
    decided before the lock, then `_step`. Answers the step's outcome and moves (None, and no
    step, when the task has asked `asks` rounds already) and the rounds of asking it made."""
    paced = bot_timing.pace_ms(table) > 0
    answers: dict[int, extbots.Answer] = {}
    decided = None
    asked = 0
    if decides_first(table):  # brought or thinking bots: asked, or decided, before the lock
        if table.state is None:
            return Outcome(None), 0, 0
        state = state_from_dict(table.state)
        asking = external_to_act(table, state)
        if asking:
            if asks is not None and rounds >= asks:
                return Outcome(None), None, 0
            answers = extbots.ask(table, state, asking)  # outside any transaction
            asked = 1
        decided = None if asking else _decide_unlocked(table, state)
    rest = None if most is None else most - made
    out, moved = _step(table_id, version, answers, rest, paced, decided)
    return out, moved, asked


THINKING = ("strong", "expert")  # levels whose decision takes long enough to be made unlocked


def decides_first(table: Table) -> bool:
    """Whether a move at this table may need deciding before the lock: a brought bot to ask, a
    level that thinks, or a thinking time. Otherwise every bot move is made in the transaction,
    and the task needs nothing of the table before it locks it but its version and turn."""
    if bot_timing.think_ms(table) is not None:
        return True
    levels = [str(s["bot"]) for s in table.seating if s["bot"]]
    return any(level in THINKING or extbots.is_external(level) for level in levels)


def first_read(table_id: int) -> Table | None:
    """The table as a bot task first reads it, without a lock: without its engine state (a long
    game's is several kilobytes of JSON) when `decides_first` says nothing needs it."""
    head = reads.table_head(table_id)
    return reads.table_row(table_id) if head is not None and decides_first(head) else head


def _decide_unlocked(table: Table, state: State) -> Decided | None:
    """The move of the first seat to act when it is a built-in bot that thinks, decided from this
    unlocked read (its random stream as the transaction would use it); None for any other seat."""
    due = [
        s
        for s in state.to_act()
        if plays_itself(table, s) and not extbots.is_external(table.seating[s]["bot"])
    ]
    if not due or table.seating[due[0]].get("away"):
        return None
    seat, level = due[0], str(table.seating[due[0]]["bot"])
    think = bot_timing.think_ms(table)
    if level not in THINKING and think is None:
        return None
    shared = tournaments.shared_rng(table)
    rng = shared or random.Random(f"{table.seed}/{table.version}/{seat}")
    with metrics.bot_decision(level):
        action = action_from_dict(decide(view(state, seat, history=False), level, rng, think_ms=think))
    return Decided(seat, action, None if shared is None else tournaments.rng_state(shared))


@dataclass(frozen=True)
class Decided:
    """A bot's move decided before the transaction, and its table's shared random stream after it."""

    seat: int
    action: Any
    rng: list[Any] | None


def _step(
    table_id: int,
    version: int,
    answers: dict[int, extbots.Answer],
    limit: int | None,
    paced: bool | None,
    decided: Decided | None = None,
) -> tuple[Outcome, int | None]:
    """One transaction: the brought bots' answers (or their fallbacks), then the built-in bots'
    moves after them (at a paced table, none after an answered card); or the one move `decided`
    before it. The wake-ups go out on commit; the next task is the caller's to queue, but for a
    paced table's, queued after the pace. `paced` None: the table was not read before, so its pace
    is taken from the locked row, and a table where a move may need deciding first
    (`decides_first`) is left as it is, answering None moves: the caller reads it and decides."""
    with transaction.atomic():
        table, _ = locked(table_id, UNSCOPED, with_seats=False)
        if table.version != version or not table.bot_turn or table.state is None:
            return Outcome(None), 0
        if paced is None:
            if decides_first(table):
                return Outcome(None), None
            paced = bot_timing.pace_ms(table) > 0
        state = state_from_dict(table.state)
        moves: list[Move] = []
        events: list[Event] = []
        if decided is not None:  # the version is the one it was decided on: the same state
            before = (state.phase, state.hand_no, len(state.sheet))
            events = state.push(decided.seat, decided.action)
            kind = KIND_OF_ACTION[type(decided.action)]
            log(table, kind, decided.seat, decided.action.to_dict(), events, staged=moves)
            metrics.action_applied(kind, "bot")
            store_state(table, state, before)
            if decided.rng is not None:
                table.bot_rng = decided.rng
            write(table, moves, BOT_FIELDS)
            schedule(table, bots=paced)
            return Outcome(table, events, state=state), 1
        for seat in sorted(answers):
            if seat in state.to_act():
                events += _answer(table, state, answers[seat], moves)
        if not (paced and moves):
            rest = None if limit is None else max(limit - len(moves), 0)
            events += advance(table, state, moves, limit=rest, one_card=paced)
        write(table, moves, BOT_FIELDS)
        out = Outcome(table, events, state=state)
        schedule(table, bots=paced)
        return out, len(moves)


def _answer(table: Table, state: State, answer: extbots.Answer, moves: list[Move]) -> list[Event]:
    """Apply a brought bot's answer, or the `basic` bot's move when it is late, failed or illegal."""
    seat, reason, error = answer.seat, answer.reason, answer.error
    before = (state.phase, state.hand_no, len(state.sheet))
    action: Any = None
    events: list[Event] = []
    if reason is None and answer.action is not None:
        parsed = action_from_dict(answer.action)
        try:
            events = state.push(seat, parsed)
            action = parsed
        except EngineError as exc:  # only the code: the app's counters never quote a card
            reason, error = "illegal", f"refused by the rules: {exc.code}"
    if action is None:
        rng = random.Random(f"{table.seed}/{table.version}/{seat}")
        with metrics.bot_decision("basic"):
            action = action_from_dict(decide(view(state, seat, history=False), "basic", rng))
        events = [public("bot_fallback", seat=seat, reason=reason), *state.push(seat, action)]
    if answer.endpoint_id is not None:
        extbots.count(answer.endpoint_id, reason, error)
    metrics.brought_bot_move(reason or "answered")
    kind = KIND_OF_ACTION[type(action)]
    log(table, kind, seat, action.to_dict(), events, staged=moves)
    metrics.action_applied(kind, "bot")
    store_state(table, state, before)
    return events
