"""Stored tables, seats, hands, scoresheet rows and the move log that replays them."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import orjson
from django.db import models


def compact_json(value: Any) -> str:
    """JSON text without spaces, non-ASCII characters as they are: the same text as the json module's
    `dumps(value, separators=(",", ":"), ensure_ascii=False)`, made by orjson in a tenth of the time."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # what orjson refuses and json takes (an integer past 64 bits)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def jsonb_order(value: Any) -> Any:
    """A JSON value with its objects' keys in PostgreSQL jsonb's order (shorter keys first, then by
    their bytes): what a jsonb column gives back, so that answers built from a value serialise byte
    for byte as answers built from a row read back. A new value: nothing of `value` is shared."""
    if not isinstance(value, dict | list):
        return value
    try:
        return orjson.loads(orjson.dumps(_ordered(value)))
    except orjson.JSONEncodeError:
        return _ordered_copy(value)


def jsonb_text(value: Any) -> str:
    """Compact JSON text of `value` with its objects' keys in jsonb's order (`jsonb_order`), made
    without copying it whole: only objects are rebuilt in that order, and each array that holds no
    object is written as it is (most of a state: its hands, tricks and history are arrays of numbers
    and strings)."""
    try:
        return orjson.dumps(_ordered(value)).decode()
    except orjson.JSONEncodeError:
        return compact_json(_ordered_copy(value))


def _ordered(value: Any) -> Any:
    """`value` with its objects rebuilt in jsonb's key order; arrays with no object inside (none in
    orjson's text of them: a brace in a string only costs a walk) are the same objects."""
    if isinstance(value, dict):
        return {k: _inner(value[k]) for k in _key_order(tuple(value))}
    if isinstance(value, list) and b"{" in orjson.dumps(value):
        return [_inner(v) for v in value]
    return value


def _inner(value: Any) -> Any:
    return _ordered(value) if isinstance(value, dict | list) else value


def _ordered_copy(value: Any) -> Any:
    """`jsonb_order` in plain Python, for what orjson cannot write."""
    if isinstance(value, dict):
        return {k: _ordered_copy(value[k]) for k in _key_order(tuple(value))}
    if isinstance(value, list):
        return [_ordered_copy(v) for v in value]
    return value


_KEY_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """jsonb's order of an object's keys, kept per set of keys as written (a state's objects have a
    few shapes, met again at every write)."""
    order = _KEY_ORDERS.get(keys)
    if order is None:
        order = tuple(sorted(keys, key=lambda k: (len(k.encode()), k.encode())))
        if len(_KEY_ORDERS) < 4096:  # shapes are few; a flood of odd keys is not kept
            _KEY_ORDERS[keys] = order
    return order


def stored_json(value: Any, vendor: str) -> str:
    """A table's state as its column holds it (JSONText) and its wake-up carries it: compact JSON,
    on PostgreSQL with jsonb's key order, the order the column had when it was jsonb (every answer
    built from a state read back keeps the bytes it had, and a sealed game's replayed state, ordered
    so by games.records, still reads the same as the hot one)."""
    return jsonb_text(value) if vendor == "postgresql" else compact_json(value)


class JSONText(models.JSONField):
    """JSON kept as plain text, not PostgreSQL's jsonb: for a table's engine state, written whole
    after every change and never queried inside. jsonb parses and compresses what it stores:
    writing a state of a few kilobytes costs PostgreSQL about twice the CPU as jsonb as it does as
    text (bench/state_column.py). The value is a Python object, as a JSONField's; the column holds
    its compact JSON text (`stored_json`), parsed by orjson on reading (a third of the time of
    JSONField's `json.loads`)."""

    def db_type(self, connection: Any) -> str:
        return "text"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:  # NaN or an infinity, which json reads; else as JSONField
            return super().from_db_value(value, expression, connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None or hasattr(value, "as_sql"):
            return value
        return stored_json(value, connection.vendor)


class App(models.Model):
    """An integrating application. It calls with its API keys (ApiKey: several, each scoped)."""

    name = models.CharField(max_length=100)
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Finished tables older than this many days move to the archive (games.records); "
        "null: the settings' ARCHIVE_AFTER_DAYS.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Player(models.Model):
    """Someone who sits at tables: a user of an app, or a self-service guest (`app` empty)."""

    app = models.ForeignKey(App, null=True, blank=True, on_delete=models.CASCADE, related_name="players")
    name = models.CharField(max_length=64)
    external_id = models.CharField(max_length=128, blank=True, help_text="The app's own id for this user.")
    language = models.CharField(
        max_length=16,
        blank=True,
        default="",
        help_text="The language of this player's answers (settings.LANGUAGES); blank: Accept-Language.",
    )
    erased_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Erased (games.services.erasure): every personal field is gone and `name` is a "
        "pseudonym, kept so that the games they played still read and verify.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class PlayerToken(models.Model):
    """A bearer token of a player, stored as a SHA-256 hash; revoked tokens stop working at once."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Refused from then on (token_expired); null: never expires."
    )


class SeatRow(TypedDict):
    """One seat as the table row keeps it (`Table.seating`) and as every answer shows it."""

    position: int
    player: int | None
    name: str | None
    bot: str | None  # the bot level, or None for a person or an open seat
    away: bool  # timed out too often: the server plays it until the player acts again
    timeouts: int  # clocks run out in a row


def seat_of_player(seating: list[SeatRow], player_id: int) -> int | None:
    """The position of this player's seat in a seating, or None when they have none."""
    return next((s["position"] for s in seating if s["player"] == player_id), None)


class Table(models.Model):
    """One game. `state` is the engine's serialised state; `version` counts applied changes."""

    class Status(models.TextChoices):
        OPEN = "open"
        PASSING = "passing"
        PLAYING = "playing"
        MOON_CHOICE = "moon_choice"
        FINISHED = "finished"
        ABANDONED = "abandoned"

    app = models.ForeignKey(App, null=True, blank=True, on_delete=models.CASCADE, related_name="tables")
    options = models.JSONField(help_text="Engine table options, fixed at creation.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    version = models.PositiveIntegerField(default=0)
    seed = models.CharField(max_length=128, help_text="The game seed: secret until the game is over.")
    state = JSONText(null=True, blank=True)
    hand_number = models.PositiveIntegerField(default=0)
    seating = models.JSONField(
        default=list,
        help_text="The seats as players see them, kept in step by games.services (one read per table).",
    )
    clocks = models.JSONField(
        default=dict, help_text="Seconds per pass, play and moon choice (null: no clock)."
    )
    deadline = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="When the seat(s) to act time out; null without a clock.",
    )
    reminder_at = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="Correspondence clocks: when the seats to act are reminded (push, webhook); null: none.",
    )
    bot_turn = models.BooleanField(
        default=False,
        db_index=True,
        help_text="A bot (or a seat marked away) is to act: a worker owes a move.",
    )
    rematch_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="rematch",
        help_text="The finished table this one is the rematch of (seats rotated one place).",
    )
    match_key = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text="Quick play: the criteria a waiting table matches (blank for other tables).",
    )
    fill_with = models.CharField(
        max_length=32,
        blank=True,
        help_text="Quick play: the bot level that fills the open seats at the deadline (blank: it expires).",
    )
    rematch_votes = models.JSONField(
        default=list,
        blank=True,
        help_text="Players who asked for (or accepted) a rematch of this finished game.",
    )
    visibility = models.CharField(
        max_length=8,
        choices=[("public", "public"), ("unlisted", "unlisted"), ("private", "private")],
        default="public",
        help_text="public: listed; unlisted: not listed, open to its scope by id; private: named "
        "players and invite codes only (docs/lobby.md).",
    )
    invited = models.JSONField(
        default=list,
        blank=True,
        help_text="Players the creator named: they may see and join this table whatever its visibility.",
    )
    spectator_delay = models.JSONField(
        null=True,
        blank=True,
        help_text='What players not seated here see lags by: {"seconds": N} or {"tricks": N} (null: none).',
    )
    rated = models.BooleanField(
        default=False,
        help_text="A finished game here updates its players' ratings (docs/ratings.md); fixed at creation.",
    )
    hints = models.BooleanField(
        default=False,
        help_text="Its seated players may ask the bots for a hint on their turn (docs/hints.md); fixed "
        "at creation, never at a rated or tournament table.",
    )
    tournament = models.ForeignKey(
        "Tournament",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="tables",
        help_text="The duplicate tournament this table plays a deal set of (docs/tournaments.md).",
    )
    deal_set = models.PositiveIntegerField(null=True, blank=True, help_text="Tournament: the deal set.")
    rotation = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Tournament: the rotation of the entrants through the seats."
    )
    bot_rng = models.JSONField(
        null=True,
        blank=True,
        help_text="Tournament: the random stream its bots share (Random.getstate), so that they "
        "decide as bots.tournament's do.",
    )
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="When the game ended (finished or abandoned)."
    )
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its record moved to the archive: hands, scores and moves are read from there.",
    )
    archive = models.CharField(
        max_length=255, blank=True, help_text="The archive's name in the archive storage (games.records)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["app", "finished_at"],
                condition=models.Q(finished_at__isnull=False, archived_at__isnull=True),
                name="table_to_archive",
            )
        ]

    # Not a column: after games.services.record.write, (the version written, that change as its
    # wake-up carries it or None); games.services.record.schedule hands it to the wake-up.
    carried: tuple[int, str | None] | None = None

    def seat_of(self, player_id: int) -> int | None:
        """The position of this player's seat at the table, or None when they have none."""
        return seat_of_player(self.seating, player_id)

    def __str__(self) -> str:
        return f"table {self.pk} ({self.status})"


class HintCount(models.Model):
    """How many hints a seat of a table was given (docs/hints.md): shown in the game's export and
    transcript, so that a game played with hints is known. One row per seat that asked."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="hint_counts")
    seat = models.PositiveSmallIntegerField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["table", "seat"]
        constraints = [models.UniqueConstraint(fields=["table", "seat"], name="hint_count_unique")]

    def __str__(self) -> str:
        return f"{self.count} hints to seat {self.seat} of table {self.table_id}"


class Seat(models.Model):
    """A position at a table: empty, a named player, or a bot of some level."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="seats")
    position = models.PositiveSmallIntegerField()
    player = models.ForeignKey(
        Player, null=True, blank=True, on_delete=models.PROTECT, related_name="seats", db_index=False
    )
    bot_level = models.CharField(max_length=32, blank=True)
    timeouts = models.PositiveSmallIntegerField(default=0, help_text="Turns in a row the clock ran out.")
    away = models.BooleanField(default=False, help_text="Played by a bot until the player acts again.")

    class Meta:
        ordering = ["table", "position"]
        # A player's tables newest first, read from the index alone however many games they played
        # (a list of "my tables" stays as fast at a million games: bench/growth.py).
        indexes = [models.Index(fields=["player", "table"], name="seat_player_table")]
        constraints = [
            models.UniqueConstraint(fields=["table", "position"], name="seat_position_unique"),
            models.UniqueConstraint(
                fields=["table", "player"],
                condition=models.Q(player__isnull=False),
                name="one_seat_per_player",
            ),
        ]

    @property
    def taken(self) -> bool:
        return self.player_id is not None or bool(self.bot_level)

    def __str__(self) -> str:
        return f"seat {self.position} of table {self.table_id}"


class Hand(models.Model):
    """A dealt hand; its `seed` reproduces the deal and is public only once the hand is over."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="hands")
    number = models.PositiveIntegerField()
    pass_direction = models.CharField(max_length=8)
    seed = models.CharField(max_length=64)
    deal_commitment = models.CharField(max_length=64)
    finished = models.BooleanField(default=False)

    class Meta:
        ordering = ["table", "number"]
        constraints = [models.UniqueConstraint(fields=["table", "number"], name="hand_number_unique")]


class ScoreRow(models.Model):
    """One seat's line of the scoresheet for one hand."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="score_rows")
    hand_number = models.PositiveIntegerField()
    position = models.PositiveSmallIntegerField()
    points = models.IntegerField()
    total = models.IntegerField()

    class Meta:
        ordering = ["table", "hand_number", "position"]
        constraints = [
            models.UniqueConstraint(fields=["table", "hand_number", "position"], name="score_row_unique")
        ]


class Move(models.Model):
    """The append-only move log: every change to a table in order; replaying it rebuilds the table."""

    class Kind(models.TextChoices):
        JOIN = "join"
        ADD_BOT = "add_bot"
        LEAVE = "leave"
        START = "start"
        PASS = "pass"
        PLAY = "play"
        MOON = "moon"
        ABANDON = "abandon"
        BACK = "back"
        REMATCH = "rematch"

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="moves")
    seq = models.PositiveIntegerField(help_text="The table version this move produced.")
    hand = models.PositiveIntegerField(default=0, help_text="The hand being played when it was made.")
    position = models.PositiveSmallIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    payload = models.JSONField(default=dict, blank=True)
    events = models.JSONField(
        default=list, blank=True, help_text="What the move caused: [type, data, seat or null for everyone]."
    )
    idempotency_key = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["table", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["table", "seq"], name="move_seq_unique"),
            models.UniqueConstraint(
                fields=["table", "position", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="move_idempotency_key_unique",
            ),
        ]


class FormerSeat(models.Model):
    """A player who took a seat at this table and left it before the game began: the table's log
    (its events, its sealed record, its archive) still names them though no seat does, so erasure
    finds the table here (games.services.erasure). Written by games.services.record.log."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="former_seats")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="former_seats")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "player"], name="former_seat_once")]


class GameRecord(models.Model):
    """A game that is over, sealed: its whole move log (payloads, events, times, keys) in one compact
    record (games.records.codec) instead of a row per move, its hands and scoresheet rows gone
    too (the record and the engine rebuild them). Reads see no difference (games.records)."""

    table = models.OneToOneField(Table, primary_key=True, on_delete=models.CASCADE, related_name="record")
    data = models.BinaryField(help_text="The encoded move log (games.records.codec).")
    created_at = models.DateTimeField(auto_now_add=True)


class ExportJob(models.Model):
    """An export being made or made: one player's data (games.privacy) or a whole app's, written to
    the export storage and downloadable by whoever asked until `expires_at`."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    uuid = models.UUIDField(unique=True)
    app = models.ForeignKey(App, null=True, blank=True, on_delete=models.CASCADE, related_name="exports")
    player = models.ForeignKey(
        Player,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="exports",
        help_text="Whose data (null: the whole app's).",
    )
    requested_by = models.CharField(max_length=40, help_text="'player:<id>', 'app:<id>' or 'operator'.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    file = models.CharField(max_length=255, blank=True, help_text="The document's name in the storage.")
    size = models.PositiveBigIntegerField(null=True, blank=True, help_text="Bytes of the document.")
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="The document is deleted then.")

    def __str__(self) -> str:
        return f"export {self.uuid} ({self.status})"


class IdempotentRequest(models.Model):
    """The first answer to a request sent with an Idempotency-Key, kept so that a retry gets the
    same bytes back. Written in the same transaction as the change the request made."""

    owner = models.CharField(max_length=40, help_text="Whose key: 'player:<id>' or 'app:<id>'.")
    key = models.CharField(max_length=128)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the method, path and body.")
    status = models.PositiveSmallIntegerField()
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotent_request_unique")]


class WebhookEndpoint(models.Model):
    """A URL an app registered to receive its tables' public events, signed with a secret that is
    shown once. The secret itself is not stored: it is derived from `secret_salt` and the
    server's WEBHOOK_SECRET_KEY (HMAC-SHA256), so the database alone cannot sign (games.webhooks)."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2000)
    event_types = models.JSONField(default=list, help_text='Public event types to deliver, or ["*"].')
    description = models.CharField(max_length=200, blank=True)
    secret_salt = models.CharField(max_length=64, help_text="Derives the signing secret (never shown).")
    active = models.BooleanField(default=True, help_text="A disabled endpoint gets no new deliveries.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"webhook {self.pk} of app {self.app_id}: {self.url}"


class WebhookDelivery(models.Model):
    """One move's public events for one endpoint, recorded in the move's own transaction and sent
    at least once: `uuid` is stable across attempts (webhook-id), and `body` holds the exact
    bytes every attempt sends."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    uuid = models.UUIDField(unique=True)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    table = models.ForeignKey(
        Table,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="webhook_deliveries",
        help_text="null: an app-level event (player.erased), not a table's.",
    )
    seq = models.PositiveIntegerField(help_text="The move (table version) whose events are delivered.")
    event_types = models.JSONField(default=list)
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    attempt_budget = models.PositiveIntegerField(help_text="Fails for good once attempts reach this.")
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="Due time, or a claim's lease.")
    queued_at = models.DateTimeField(null=True, blank=True, help_text="When a task was last queued for it.")
    claim = models.UUIDField(null=True, blank=True, help_text="The send in flight: only it records a result.")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    log = models.JSONField(default=list, blank=True, help_text="The latest attempts, newest last.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
            models.Index(fields=["endpoint", "status"], name="webhook_delivery_endpoint"),
        ]
        constraints = [
            # One delivery per (endpoint, move), and one reminder per (endpoint, turn): a reminder
            # (event_types ["turn_reminder"], games.services.reminders) carries the version of the
            # move that began the turn, which that move's own delivery carries too.
            models.UniqueConstraint(
                fields=["endpoint", "table", "seq"],
                condition=~models.Q(event_types=["turn_reminder"]),
                name="webhook_delivery_per_move",
            ),
            models.UniqueConstraint(
                fields=["endpoint", "table", "seq"],
                condition=models.Q(event_types=["turn_reminder"]),
                name="webhook_reminder_per_turn",
            ),
        ]

    def __str__(self) -> str:
        return f"delivery {self.uuid} ({self.status})"


class QuickPlay(models.Model):
    """A player waiting in quick play: seated at an open table that matches their criteria until it
    fills or its deadline passes. One row per player at most (the unique key), so a player waits
    in one queue at a time; the row goes when the table starts, expires or the player leaves."""

    player = models.OneToOneField(Player, on_delete=models.CASCADE, related_name="quick_play")
    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="waiting")
    created_at = models.DateTimeField(auto_now_add=True)


class Invite(models.Model):
    """An invite code to a table: random, shown once to its creator and stored as a SHA-256 hash
    (like keys and tokens), with an optional expiry and number of uses; revoking it is final."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="invites")
    code_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=8, help_text="The code's first characters, to tell codes apart.")
    created_by = models.CharField(max_length=40, help_text="'player:<id>' or 'app:<id>'.")
    expires_at = models.DateTimeField(null=True, blank=True)
    uses_left = models.PositiveIntegerField(null=True, blank=True, help_text="null: no limit.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"invite {self.hint}... to table {self.table_id}"


class Rating(models.Model):
    """A player's rating in one family (variant and player count: games.ratings.FAMILIES), with the
    app whose leaderboard it is on (null: the guests'). `score`, mu - 3 sigma, orders leaderboards."""

    app = models.ForeignKey(App, null=True, blank=True, on_delete=models.CASCADE, related_name="ratings")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="ratings")
    family = models.CharField(max_length=32)
    mu = models.FloatField()
    sigma = models.FloatField()
    score = models.FloatField(help_text="mu - 3 sigma: the conservative rating leaderboards sort by.")
    games = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["player", "family"], name="rating_per_family")]
        indexes = [models.Index(fields=["app", "family", "-score", "id"], name="rating_leaderboard")]


class RatingChange(models.Model):
    """One rated game's effect on one player's rating: the history, and what a replay checks."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="rating_changes")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="rating_changes")
    family = models.CharField(max_length=32)
    position = models.PositiveSmallIntegerField(help_text="The player's seat.")
    place = models.PositiveSmallIntegerField(help_text="1 is first; ties share a place.")
    mu_before = models.FloatField()
    sigma_before = models.FloatField()
    mu_after = models.FloatField()
    sigma_after = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "player"], name="rating_change_once")]
        indexes = [models.Index(fields=["player", "family", "-id"], name="rating_history")]


class Tournament(models.Model):
    """A duplicate tournament of an app: every deal set is played once per rotation of the
    entrants through the seats (games.engine.duplicate), and the standings compare each entrant
    with the others who held the same cards. Its tables are ordinary tables linked to it."""

    class Status(models.TextChoices):
        RUNNING = "running"
        FINISHED = "finished"

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="tournaments")
    name = models.CharField(max_length=100, blank=True)
    entrants = models.JSONField(help_text='[{"player": id or null, "bot": level or null, "name": str}].')
    options = models.JSONField(help_text="Engine options of its tables (without first_hand and hands).")
    clocks = models.JSONField(default=dict, help_text="Turn clocks of its tables with people.")
    deal_sets = models.PositiveIntegerField()
    seed = models.CharField(
        max_length=128, help_text="The seed its deal sets derive from: secret until it is finished."
    )
    seed_given = models.BooleanField(
        default=False,
        help_text="The app chose the seed (reproducible, as bots.tournament's --seed); otherwise each "
        "deal set's seed is a MAC of the secret one, so a finished table reveals no other deal set.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING, db_index=True)
    tables_total = models.PositiveIntegerField(default=0)
    tables_finished = models.PositiveIntegerField(default=0)
    standings = models.JSONField(null=True, blank=True, help_text="The final standings, once finished.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"tournament {self.pk} ({self.status})"


class BotEndpoint(models.Model):
    """A bot an app brings (docs/bots-byo.md): a URL the service POSTs a seat's view to when that
    seat (level `ext:<name>`) must act, signed like webhooks with a secret shown once and derived,
    like theirs, from `secret_salt` and WEBHOOK_SECRET_KEY. The counters say how it answered: every
    fallback to the `basic` bot is counted by its reason (games.extbots)."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="bot_endpoints")
    name = models.CharField(max_length=64, help_text="Seats name it as the level ext:<name>.")
    url = models.CharField(max_length=2000)
    timeout_ms = models.PositiveIntegerField(default=1000, help_text="How long one move may take.")
    secret_salt = models.CharField(max_length=64, help_text="Derives the signing secret (never shown).")
    enabled = models.BooleanField(default=True, help_text="A disabled bot is not called: basic moves.")
    calls = models.PositiveIntegerField(default=0, help_text="Moves it was asked for.")
    answered = models.PositiveIntegerField(default=0, help_text="Moves it answered in time, legally.")
    fallback_timeout = models.PositiveIntegerField(default=0)
    fallback_failed = models.PositiveIntegerField(default=0)
    fallback_bad_answer = models.PositiveIntegerField(default=0)
    fallback_illegal = models.PositiveIntegerField(default=0)
    fallback_disabled = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    last_called_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "name"], name="bot_endpoint_name_unique")]

    def __str__(self) -> str:
        return f"bot {self.name} of app {self.app_id}: {self.url}"


class PushDevice(models.Model):
    """A phone or browser a player receives notifications on (games.push; docs/push.md). `token` is
    the FCM registration token, the APNs device token (hex) or the Web Push endpoint URL; one device
    belongs to one player of one scope (the app, or 0 for guests): registering it again moves it."""

    class Kind(models.TextChoices):
        FCM = "fcm"
        APNS = "apns"
        WEBPUSH = "webpush"

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="devices")
    scope = models.PositiveIntegerField(default=0, help_text="The player's app id, or 0 for a guest.")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    token = models.CharField(max_length=1024)
    keys = models.JSONField(
        default=dict, blank=True, help_text="Web Push: the subscription's p256dh and auth."
    )
    topic = models.CharField(
        max_length=255, blank=True, help_text="APNs: the app's bundle id (blank: the app's)."
    )
    label = models.CharField(max_length=64, blank=True, help_text="The player's own name for it.")
    language = models.CharField(
        max_length=16,
        blank=True,
        help_text="The registering request's language: its pushes' when the player chose none.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Pushes stop after this (null: never)."
    )
    last_pushed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "kind", "token"], name="push_device_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} device {self.pk} of player {self.player_id}"


class PushCredential(models.Model):
    """An app's key for one push provider (FCM, APNs) or its VAPID pair (Web Push; scope 0 is the
    service's own pair, used for guests). `secret` is the private part encrypted with the settings'
    PUSH_ENCRYPTION_KEYS (MultiFernet); `public` holds what may be shown."""

    class Provider(models.TextChoices):
        FCM = "fcm"
        APNS = "apns"
        WEBPUSH = "webpush"

    scope = models.PositiveIntegerField(default=0, help_text="The app id, or 0 for the service's own.")
    provider = models.CharField(max_length=8, choices=Provider.choices)
    public = models.JSONField(
        default=dict,
        help_text="FCM project and client email; APNs key id, team, topic, sandbox; VAPID public key.",
    )
    secret = models.TextField(help_text="The private key, encrypted (never returned).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "provider"], name="push_credential_unique"),
        ]


class PushMessage(models.Model):
    """One notification for one device, recorded in the transaction of the change that caused it and
    sent at most once by the push lane: `key` (unique per device) makes a turn one message however
    often it is recorded, and a send whose worker died after its claim is `in_doubt`, never repeated."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"
        CANCELLED = "cancelled"  # no longer true (the seat acted) or the player was watching
        IN_DOUBT = "in_doubt"  # the worker died mid-send: the provider may have it, so not sent again

    uuid = models.UUIDField(unique=True)
    device = models.ForeignKey(PushDevice, on_delete=models.CASCADE, related_name="messages")
    table = models.ForeignKey(
        Table, null=True, blank=True, on_delete=models.CASCADE, related_name="push_messages"
    )
    kind = models.CharField(max_length=16, help_text="turn, invite, rematch, finished or reminder.")
    key = models.CharField(
        max_length=96, help_text="What makes it one message: e.g. turn:<table>:<version>:<seat>."
    )
    version = models.PositiveIntegerField(
        null=True, blank=True, help_text="The table version it was recorded at."
    )
    seat = models.PositiveSmallIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    not_before = models.DateTimeField(
        help_text="Sent from then on (the grace for a player who glanced away)."
    )
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="Due time, or a claim's lease.")
    queued_at = models.DateTimeField(null=True, blank=True)
    claim = models.UUIDField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="push_message_due")]
        constraints = [models.UniqueConstraint(fields=["device", "key"], name="push_message_once")]

    def __str__(self) -> str:
        return f"push {self.uuid} ({self.kind}, {self.status})"


class ApiKey(models.Model):
    """One API key of an app, stored as a SHA-256 hash (the key is 256 random bits, so a fast hash
    is enough) and shown once. Its scopes say what it may do (games.accounts.Scope); a revoked key
    stops at once, an expired one (a rotated key after its overlap) from `expires_at` on."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=64, blank=True, help_text="The app's label for the key.")
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list, help_text="The scopes it grants (games.accounts.Scope).")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(
        null=True, blank=True, help_text="Written at most once a minute (games.accounts.USED_EVERY)."
    )
    replaced_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replaces",
        help_text="The key a rotation made: this one works until its expires_at (the overlap).",
    )

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'key'})"


class AppQuota(models.Model):
    """The operator's own limits for one app (games.quotas): each field overrides the setting of the
    same quota (QUOTA_*); null keeps the setting's default. Set in the admin or with
    `manage.py set_quota`."""

    app = models.OneToOneField(App, on_delete=models.CASCADE, related_name="quota")
    streams_per_token = models.PositiveIntegerField(
        null=True, blank=True, help_text="Open event streams and subscriptions of one key or token."
    )
    streams_per_app = models.PositiveIntegerField(
        null=True, blank=True, help_text="Open event streams and subscriptions of the app, all together."
    )
    open_tables = models.PositiveIntegerField(null=True, blank=True, help_text="Unfinished tables.")
    tournaments_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tournaments created per UTC day."
    )
    bots = models.PositiveIntegerField(null=True, blank=True, help_text="Bot endpoints the app brings.")
    webhooks = models.PositiveIntegerField(null=True, blank=True, help_text="Webhook endpoints.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"quotas of app {self.app_id}"


class AuditEntry(models.Model):
    """One configuration change (games.audit): who made it (an app key or an admin user), when, in
    which request, and the changed fields before and after (never a secret). Rows are only
    appended; each one's `hash` is SHA-256 over the previous row's hash and this row's canonical
    JSON, so an edited or deleted row breaks the chain (`manage.py check_audit_chain`). `app` is a
    plain id, not a foreign key: the chain outlives a deleted app."""

    app_id = models.BigIntegerField(null=True, blank=True, db_index=True, help_text="The app it concerns.")
    at = models.DateTimeField()
    actor_kind = models.CharField(max_length=16, help_text="app_key or admin.")
    actor = models.CharField(max_length=150, help_text="The key (its id and label) or the admin user.")
    request_id = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=64, help_text="The operation (createWebhook...) or admin.<verb>.")
    target = models.CharField(max_length=64, blank=True, help_text="What changed: webhook:3, app:1...")
    changes = models.JSONField(default=dict, help_text='{"field": [before, after]}, secrets left out.')
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        indexes = [models.Index(fields=["app_id", "-id"], name="audit_of_app")]

    def __str__(self) -> str:
        return f"audit {self.pk}: {self.action} {self.target}"
