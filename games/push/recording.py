"""Recording notifications in the transaction of the change that causes them, and queueing their sends
after the commit: a committed turn always has its pushes and a rolled-back one never does.

Each message is keyed (unique per device): a turn by the table, hand, phase, trick and seat, so that
recording it again (a pass that leaves other seats to pass, a retried transaction) adds nothing. A
turn waits PUSH_GRACE_SECONDS before it is sent, and is sent only if it is still the seat's turn and
its player has no live stream on the table then (games.push.sending)."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from games.engine import GAME_OVER, State
from games.infra import jobs, presence
from games.models import PushDevice, PushMessage, Table
from games.prepared import Prepared, PreparedInsert
from hearts_service import tracing

# A turn's word in its text, by the table's status (which follows the game's phase); otherwise "play".
PHASE_OF_STATUS: dict[str, str] = {Table.Status.PASSING: "pass", Table.Status.MOON_CHOICE: "moon"}
# Whether a player has a device, per process for CACHE_SECONDS: a move where a person is to act
# costs no query for players without one (most of them). A device registered elsewhere is seen
# within that time; one registered in this process at once (`forget`).
CACHE_SECONDS = 5.0
KNOWN_ONE_BY_ONE = 3  # up to this many new messages are looked up one by one (prepared), more at once
_has_devices: dict[int, tuple[float, bool]] = {}
_cache_lock = threading.Lock()


_ONE_DEVICE = Prepared(lambda player: PushDevice.objects.filter(player_id=player).only("pk")[:1], [int])


def forget(player_id: int) -> None:
    """The player's devices changed: ask the database next time."""
    with _cache_lock:
        _has_devices.pop(player_id, None)


def _with_devices(player_ids: Iterable[int]) -> list[int]:
    wanted = sorted(set(player_ids))
    now = time.monotonic()
    with _cache_lock:
        known = {p: _has_devices[p][1] for p in wanted if p in _has_devices and _has_devices[p][0] > now}
    unknown = [p for p in wanted if p not in known]
    if len(unknown) == 1:  # the common case: the one person to act (compiled once)
        found = {unknown[0]} if _ONE_DEVICE.first(unknown[0]) is not None else set()
    elif unknown:
        found = set(PushDevice.objects.filter(player_id__in=unknown).values_list("player_id", flat=True))
    if unknown:
        with _cache_lock:
            for p in unknown:
                _has_devices[p] = (now + CACHE_SECONDS, p in found)
                known[p] = p in found
    return [p for p in wanted if known[p]]


def turn_key(table_id: int, state: State, seat: int) -> str:
    """What makes a turn one: the same while the seat is to act, new at its next turn."""
    return f"turn:{table_id}:{state.hand_no}:{state.phase}:{len(state.tricks)}:{seat}"


def phase_word(table: Table | None) -> str:
    """The word of the turn a table's seat is told of: from its status, no game state parsed."""
    if table is None or table.state is None:
        return "play"
    return PHASE_OF_STATUS.get(table.status, "play")


def turns(table: Table, state: State) -> None:
    """The people to act now (not a bot's seat, not one marked away) are told it is their turn."""
    if state.phase == GAME_OVER:
        return
    people = {}
    for seat in state.to_act():
        info = table.seating[seat]
        if info["player"] is not None and not info["bot"] and not info.get("away"):
            people[seat] = info["player"]
    if not people:
        return
    reached = set(_with_devices(people.values()))
    targets = [(seat, player) for seat, player in people.items() if player in reached]
    if targets:
        _record(
            table,
            "turn",
            [(player, turn_key(table.pk, state, seat), seat) for seat, player in targets],
            delay=float(settings.PUSH_GRACE_SECONDS),
        )


def events(table: Table, tagged: Sequence[list[Any]]) -> None:
    """A move's public events that concern people away from the table: a rematch offered (to the
    other people seated) and the game over (to every person seated)."""
    kinds = {e[0] for e in tagged if e[2] is None}
    if not kinds & {"rematch_proposed", "table_finished"}:
        return
    people = [(s["position"], s["player"]) for s in table.seating if s["player"] is not None and not s["bot"]]
    if not people:
        return
    reached = set(_with_devices(p for _, p in people))
    rows: list[tuple[str, list[tuple[int, str, int | None]]]] = []
    for e in tagged:
        if e[2] is not None:
            continue
        if e[0] == "rematch_proposed":
            proposer = e[1].get("seat")
            key = f"rematch:{table.pk}"
            rows.append(("rematch", [(p, key, s) for s, p in people if s != proposer and p in reached]))
        elif e[0] == "table_finished" and e[1].get("status") == "finished":
            # Checked now, not only when sent: a finished table's streams end once they have
            # delivered its last events, so by the time the lane looks, a player who watched the
            # end would no longer count as watching.
            key = f"finished:{table.pk}"
            away = [
                (p, key, s) for s, p in people if p in reached and presence.watching(table.pk, p) is not True
            ]
            rows.append(("finished", away))
    for kind, targets in rows:
        if targets:
            _record(table, kind, targets)


def invited(table: Table, player_ids: Iterable[int]) -> None:
    """Players named at a new table are told they are invited."""
    reached = _with_devices(player_ids)
    if reached:
        _record(table, "invite", [(p, f"invite:{table.pk}", None) for p in reached])


def remind(table: Table, seats: Sequence[int]) -> None:
    """A correspondence turn is close to its deadline: its people are reminded (once per deadline)."""
    if table.deadline is None:
        return
    stamp = int(table.deadline.timestamp())
    targets = []
    for seat in seats:
        info = table.seating[seat]
        if info["player"] is not None and not info["bot"]:
            targets.append((info["player"], f"reminder:{table.pk}:{stamp}:{seat}", seat))
    reached = set(_with_devices(p for p, _, _ in targets))
    targets = [t for t in targets if t[0] in reached]
    if targets:
        _record(table, "reminder", targets)


# The recording's statements, compiled once per process (games.prepared): a person's every turn
# records one, and compiling these was a third of the people lane's CPU under load (issue 35).
_DEVICES_OF = Prepared(
    lambda player: PushDevice.objects.filter(player_id=player).only("pk", "expires_at"), [int]
)
_RECORDED = Prepared(
    lambda device, key: PushMessage.objects.filter(device_id=device, key=key).only("pk")[:1], [int, str]
)
_INSERT = PreparedInsert(PushMessage, ignore_conflicts=True)


def _record(
    table: Table, kind: str, targets: Sequence[tuple[int, str, int | None]], *, delay: float = 0.0
) -> None:
    """One message per device of each (player, key, seat), skipping what is recorded already."""
    by_player: dict[int, list[PushDevice]] = {}
    now = timezone.now()
    for player in {p for p, _, _ in targets}:
        live = [d for d in _DEVICES_OF(player) if d.expires_at is None or d.expires_at > now]
        by_player[player] = sorted(live, key=lambda d: d.pk)
    due = now + dt.timedelta(seconds=delay)
    rows = [
        PushMessage(
            uuid=uuid.uuid4(),
            device_id=device.pk,
            table=table,
            kind=kind,
            key=key,
            version=table.version,
            seat=seat,
            not_before=due,
            next_attempt_at=due,
            queued_at=now,
        )
        for player, key, seat in targets
        for device in by_player.get(player, ())
    ]
    if not rows:
        return
    # Recorded already (a pass that leaves other seats to pass records each turn again): nothing
    # more, and no task for it. The unique constraint still holds against a racing transaction.
    if len(rows) == 1:  # the common case (one device): the insert itself says whether it was new
        if _INSERT(rows):
            ids = [str(rows[0].uuid)]
            transaction.on_commit(lambda: queue(ids, countdown=delay))
        return
    if len(rows) <= KNOWN_ONE_BY_ONE:
        known = {(r.device_id, r.key) for r in rows if _RECORDED(r.device_id, r.key)}
    else:
        known = set(
            PushMessage.objects.filter(
                device_id__in={r.device_id for r in rows}, key__in={r.key for r in rows}
            ).values_list("device_id", "key")
        )
    rows = [r for r in rows if (r.device_id, r.key) not in known]
    if not rows:
        return
    _INSERT(rows)
    ids = [str(r.uuid) for r in rows]
    transaction.on_commit(lambda: queue(ids, countdown=delay))


def queue(message_ids: Iterable[str], countdown: float = 0.0) -> None:
    """Queue the sends on the push lane, `countdown` seconds from now (the grace). In eager mode (the
    embedded run, tests) nothing is queued: the embedded sweep's sender thread sends what is due."""
    if jobs.eager():
        tracing.remember(message_ids)  # the sender thread continues this trace (hearts_service.tracing)
        return
    for message_id in message_ids:
        jobs.deliver_push(message_id, countdown)
