"""The transaction every change runs in: locking a table, the client's version, idempotent answers,
and the checks and validated inputs the changes share."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from bots import LEVELS
from games import extbots, reads
from games.accounts import Principal
from games.engine import Event, State
from games.errors import ServiceError
from games.models import App, IdempotentRequest, Move, Player, Seat, Table, WebhookEndpoint, compact_json
from games.prepared import Prepared, PreparedInsert
from games.services.record import schedule

# Turn clocks in seconds (None: no clock), and how many timeouts in a row mark a seat away. A turn
# may last 14 days: a play clock of an hour or more makes a correspondence table (games.bot_timing).
CLOCK_DEFAULTS: dict[str, int | None] = {"pass": 60, "play": 30, "moon": 30, "away_after": 2}
CLOCK_MAX = 14 * 86_400
_CLOCK_LIMITS = {
    "pass": (5, CLOCK_MAX),
    "play": (5, CLOCK_MAX),
    "moon": (5, CLOCK_MAX),
    "away_after": (1, 20),
}


@dataclass(frozen=True)
class Outcome:
    """What a request did: the table after it, and the engine events of the action.
    With an idempotency key, `response` is the (status, body) answered the first time, and
    `replayed` says this request repeated it (then nothing was applied again and `table` is None).
    `state` is the table's engine state when the call already has it parsed, so that the answer
    does not parse it again."""

    table: Table | None
    events: list[Event] = field(default_factory=list)
    response: tuple[int, str] | None = None
    replayed: bool = False
    state: State | None = None
    made: Any = None  # what a creation made that is not a table (a tournament)


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key sent with a request: `owner` is who sent it ('player:7', 'app:2'),
    `fingerprint` identifies the request (a hash of method, path and body), and `render` turns
    the outcome into the (status, body) that is stored and answered to every repeat."""

    owner: str
    key: str
    fingerprint: str
    render: Callable[[Outcome], tuple[int, str]]

    @classmethod
    def for_table(
        cls, principal: Principal, key: str | None, what: str, payload: Any, status: int = 200
    ) -> Idempotency | None:
        """The Idempotency-Key of a request answered with the caller's view of a table, for both
        APIs: `what` names the request (REST: method, path and If-Match; GraphQL: the mutation)
        and `payload` is its input; the stored answer is the table as `principal` sees it."""
        if key is None:
            return None
        fingerprint = cls.fingerprint_of(what, payload)

        def render(out: Outcome) -> tuple[int, str]:
            assert out.table is not None
            body = reads.table_body(out.table, principal, out.state)
            return status, compact_json(body)

        return cls(principal.owner, key, fingerprint, render)

    @staticmethod
    def fingerprint_of(what: str, payload: Any) -> str:
        """What identifies a request: its name and its input, canonically."""
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(f"{what}\n{canonical}".encode()).hexdigest()

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= 128 or not (self.key.isascii() and self.key.isprintable()):
            raise ServiceError(
                "invalid_idempotency_key",
                "an idempotency key is 1 to 128 printable ASCII characters",
                kind="malformed",
            )


class Unscoped:
    """Scope of service calls made by the service itself (tasks), which see every table."""


UNSCOPED = Unscoped()
Scope = App | None | Unscoped


def clocks_from(raw: Mapping[str, Any] | None) -> dict[str, int | None]:
    """Validated turn clocks: the defaults, overridden per key; null turns a clock off."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ServiceError("invalid_clock", "clocks is an object like {'play': 30}", kind="malformed")
    clocks = dict(CLOCK_DEFAULTS)
    for name, value in raw.items():
        if name not in CLOCK_DEFAULTS:
            raise ServiceError(
                "invalid_clock",
                f"unknown clock {name!r}; known: {', '.join(CLOCK_DEFAULTS)}",
                kind="malformed",
                clock=str(name),
            )
        low, high = _CLOCK_LIMITS[name]
        if value is None and name != "away_after":
            clocks[name] = None
            continue
        if type(value) is not int or not low <= value <= high:
            raise ServiceError(
                "invalid_clock",
                f"clock {name!r} must be a whole number from {low} to {high}"
                + ("" if name == "away_after" else " (seconds), or null for no clock"),
                kind="malformed",
                clock=name,
            )
        clocks[name] = value
    return clocks


SPECTATOR_DELAY_LIMITS = {"seconds": (0, 600), "tricks": (0, 13)}


def spectator_delay_from(raw: object) -> dict[str, int] | None:
    """A validated spectator delay: {"seconds": N} or {"tricks": N} (one key, a whole number within
    SPECTATOR_DELAY_LIMITS); None or a zero delay is no delay. Else `invalid_input` on
    `spectator_delay`."""
    if raw is None:
        return None
    limits = ", ".join(f"{k} {lo} to {hi}" for k, (lo, hi) in SPECTATOR_DELAY_LIMITS.items())
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ServiceError(
            "invalid_input",
            f'spectator_delay is {{"seconds": N}} or {{"tricks": N}} ({limits})',
            kind="malformed",
            field="spectator_delay",
        )
    ((unit, value),) = raw.items()
    low, high = SPECTATOR_DELAY_LIMITS.get(unit, (1, 0))
    if type(value) is not int or not low <= value <= high:
        raise ServiceError(
            "invalid_input",
            f"spectator_delay must be one of: {limits}",
            kind="malformed",
            field="spectator_delay",
        )
    return {unit: value} if value else None


def check_level(level: object) -> None:
    """Refuse an unknown bot level with `invalid_bot_level`: the levels are in `bots.LEVELS`, and
    `ext:<name>` names a bot an app brought (`check_seat_level` checks that it exists)."""
    if level not in LEVELS and not (
        isinstance(level, str) and extbots.is_external(level) and extbots.NAME.fullmatch(level[4:])
    ):
        raise ServiceError(
            "invalid_bot_level",
            f"bot level must be one of {', '.join(LEVELS)}, or ext:<name> for a bot the app brought",
            kind="malformed",
            levels=list(LEVELS),
        )


def check_seat_level(level: object, app_id: int | None) -> None:
    """`check_level`, and an `ext:<name>` level must name an enabled bot endpoint of the table's
    app (a guest's table has none): else `invalid_bot_level`."""
    check_level(level)
    if isinstance(level, str) and extbots.is_external(level):
        extbots.check_level(app_id, level)


# A keyed request's answer, written in its transaction with its SQL compiled once (games.prepared).
_KEEP_ANSWER = PreparedInsert(IdempotentRequest)


def run(act: Callable[[], Outcome], idempotency: Idempotency | None) -> Outcome:
    """Run `act` in one transaction. With an idempotency key, the first answer is stored in that
    same transaction, so a request either acted and left its answer or did neither; a repeat
    (after the first committed, or racing it on the same key) gets the stored answer."""
    if idempotency is None:
        with transaction.atomic():
            out = act()
            schedule(out.table)
            return out
    try:
        with transaction.atomic():
            out = act()
            schedule(out.table)
            status, body = idempotency.render(out)
            kept = IdempotentRequest(
                owner=idempotency.owner,
                key=idempotency.key,
                fingerprint=idempotency.fingerprint,
                status=status,
                body=body,
            )
            _KEEP_ANSWER([kept])  # a repeat racing this one: IntegrityError (the unique key)
            return Outcome(out.table, out.events, (status, body), made=out.made)
    except (ServiceError, IntegrityError):
        # A repeat fails where the first succeeded (the seat already passed, the key's row
        # exists): answer with the first response if there is one, else this refusal.
        prior = IdempotentRequest.objects.filter(owner=idempotency.owner, key=idempotency.key).first()
        if prior is None:
            raise
        if prior.fingerprint != idempotency.fingerprint:
            raise ServiceError(
                "idempotency_key_reused",
                "this idempotency key was used for a different request",
                kind="conflict",
            ) from None
        return Outcome(None, response=(prior.status, prior.body), replayed=True)


def locked(
    table_id: int, scope: Scope, *, with_seats: bool = True, player: Player | None = None
) -> tuple[Table, list[Seat]]:
    """The table row, locked until the transaction ends, and (when asked) its seats with their
    players. With `player`, a private table they neither sit at nor were named to is not found."""
    if isinstance(scope, Unscoped):
        table = _LOCKED.first(table_id)
    elif scope is None:
        table = _LOCKED_GUEST.first(table_id)
    else:
        table = _LOCKED_IN_APP.first(table_id, scope.pk)
    if table is None or (player is not None and not reads.may_enter(table, player.pk)):
        # another app's table, or a private one, is indistinguishable from no table
        raise ServiceError("not_found", "no such table", kind="not_found")
    if not with_seats:
        return table, []
    return table, seats_of(table)


def seats_of(table: Table) -> list[Seat]:
    """The table's seats with their players (read under the caller's lock of the table row)."""
    return list(Seat.objects.filter(table=table).select_related("player"))


def locked_unless_busy(table_id: int, version: int) -> Table | None:
    """The table row locked as `locked` locks it (any scope) if it is still at `version` and no
    other transaction holds it; else None, with nothing locked (so that the transaction has nothing
    to write at its commit). For work worth doing only on a table nobody is acting on."""
    return _LOCKED_UNLESS_BUSY.first(table_id, version)


def locked_all_unless_busy(due: Sequence[tuple[int, int]]) -> list[Table]:
    """`locked_unless_busy` for several tables (id and version each) in one statement: the ones
    still at their version that no other transaction holds, locked (in no particular order)."""
    at_version = Q(pk__in=[])
    for pk, version in due:
        at_version |= Q(pk=pk, version=version)
    return list(_locked_rows(skip_locked=True).filter(at_version))


# The table row locked (compiled once: games.prepared), in any app, a guest's, or an app's; with
# `webhooked`, whether its app has an active webhook endpoint (games.webhooks.recording reads the
# endpoints only then: one query less in every transaction of an app without them).
def _locked_rows(skip_locked: bool = False) -> QuerySet[Table]:
    hooked = WebhookEndpoint.objects.filter(app_id=OuterRef("app_id"), active=True)
    rows = Table.objects.select_for_update(of=("self",), skip_locked=skip_locked)
    return rows.annotate(webhooked=Exists(hooked))


_LOCKED = Prepared(lambda pk: _locked_rows().filter(pk=pk)[:1], [int])
_LOCKED_UNLESS_BUSY = Prepared(
    lambda pk, version: _locked_rows(skip_locked=True).filter(pk=pk, version=version)[:1], [int, int]
)
_LOCKED_GUEST = Prepared(lambda pk: _locked_rows().filter(pk=pk, app__isnull=True)[:1], [int])
_LOCKED_IN_APP = Prepared(lambda pk, app: _locked_rows().filter(pk=pk, app_id=app)[:1], [int, int])


def check_version(table: Table, expected: int | None) -> None:
    if expected is not None and expected != table.version:
        raise ServiceError(
            "stale_version",
            f"the table is at version {table.version}, not {expected}",
            kind="conflict",
            version=table.version,
        )


def check_version_for_pass(table: Table, position: int, expected: int | None) -> None:
    """Passes are simultaneous: other seats' passes since the version a client saw are not a
    conflict, so players passing at the same moment never reject each other."""
    if expected is None or expected == table.version:
        return
    since = table.moves.filter(seq__gt=expected)
    if (
        expected > table.version
        or since.exclude(kind=Move.Kind.PASS).exists()
        or since.filter(position=position).exists()
    ):
        check_version(table, expected)


def require_open(table: Table) -> None:
    if table.status != Table.Status.OPEN:
        raise ServiceError("table_not_open", f"the table is {table.status}, no longer open", kind="rules")


def open_seat(seats: list[Seat], position: int | None) -> Seat:
    if position is None:
        for seat in seats:
            if not seat.taken:
                return seat
        raise ServiceError("table_full", "every seat is taken", kind="conflict")
    for seat in seats:
        if seat.position == position:
            if seat.taken:
                raise ServiceError("seat_taken", f"seat {position} is taken", kind="conflict")
            return seat
    raise ServiceError("invalid_seat", f"no seat {position!r} at this table", kind="malformed")
