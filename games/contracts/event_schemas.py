"""The OpenAPI description of every event type and of the two stream endpoints (games/api/streams.py
adds them to the document served): the logged events, the ones streams build for their viewer, and
the one only webhooks send (a correspondence turn's reminder)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bots import LEVELS
from games.errors import Code
from games.extbots import LEVEL_PATTERN, REASONS

_INT: dict[str, Any] = {"type": "integer"}
_STR: dict[str, Any] = {"type": "string"}
_CARD: dict[str, Any] = {"type": "string", "description": "a card, like QS or TH"}
_CARDS: dict[str, Any] = {"type": "array", "items": _CARD}
_INTS: dict[str, Any] = {"type": "array", "items": _INT}
_SEAT: dict[str, Any] = {"type": "integer", "description": "seat position, 0 first"}
_CHOICE: dict[str, Any] = {"type": "string", "enum": ["subtract", "add"]}
_NUM: dict[str, Any] = {"type": "number"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return {"allOf": [schema], "nullable": True}
    return {**schema, "nullable": True}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


# type -> (description, its own fields: all of them are always present)
EVENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "game_started": ("Every seat is taken: the first hand is dealt next.", {}),
    "seat_taken": ("A player sat down.", {"seat": _SEAT, "player": _INT, "name": _STR}),
    "seat_left": ("A player gave up their seat before the start.", {"seat": _SEAT, "player": _INT}),
    "bot_added": ("A bot took a seat.", {"seat": _SEAT, "level": _ref("SeatLevel")}),
    "hand_started": (
        "A hand was dealt; the commitment is SHA-256 of the table id and the hand's seed.",
        {"dealer": _SEAT, "pass_direction": _ref("PassDirectionEnum"), "deal_commitment": _STR},
    ),
    "cards_dealt": ("Your cards for this hand (only to their seat).", {"seat": _SEAT, "cards": _CARDS}),
    "pass_submitted": ("A seat passed (which cards stays hidden).", {"seat": _SEAT}),
    "cards_passed": (
        "The cards you passed (only to their seat).",
        {"seat": _SEAT, "to": _SEAT, "cards": _CARDS},
    ),
    "passes_complete": ("Every seat has passed: play begins.", {}),
    "cards_received": (
        "The cards passed to you (only to their seat).",
        {"seat": _SEAT, "from": _SEAT, "cards": _CARDS},
    ),
    "card_played": ("A card was played to the trick.", {"seat": _SEAT, "card": _CARD}),
    "hearts_broken": ("The first penalty card was played.", {"seat": _SEAT, "card": _CARD}),
    "trick_won": (
        "A trick was taken.",
        {"seat": _SEAT, "trick": _INT, "cards": _CARDS, "points": _INT},
    ),
    "trick_carried": (
        "Cancellation Hearts: a trick with no winner, carried on.",
        {"leader": _SEAT, "cards": _CARDS},
    ),
    "moon_shot": (
        "A seat took every penalty card: it chooses how to score.",
        {"seat": _SEAT, "choices": {"type": "array", "items": _CHOICE}},
    ),
    "moon_chosen": ("The shooter's choice.", {"seat": _SEAT, "choice": _CHOICE}),
    "hand_scored": (
        "Points of the hand and running totals.",
        {"points": _INTS, "totals": _INTS, "moon": _nullable(_ref("MoonChoiceOut"))},
    ),
    "hand_revealed": (
        "The finished hand's full record, with its seed (public once it is over).",
        {"record": _ref("HandRecordOut")},
    ),
    "game_over": (
        "The game ended: winners, totals and the game seed.",
        {"winners": _INTS, "totals": _INTS, "seed": _STR},
    ),
    "table_abandoned": ("The app closed the table before the end.", {}),
    "table_finished": (
        "The table is over, however it ended (finished or abandoned).",
        {
            "status": {"type": "string", "enum": ["finished", "abandoned"]},
            "winners": _nullable(_INTS),
            "totals": _nullable(_INTS),
        },
    ),
    "ratings_changed": (
        "A rated game ended: its people's new ratings, by seat (bots' are fixed; history has the before).",
        {
            "family": _STR,
            "changes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"seat": _SEAT, "place": _INT, "mu": _NUM, "sigma": _NUM},
                    "required": ["seat", "place", "mu", "sigma"],
                    "additionalProperties": False,
                },
            },
        },
    ),
    "bot_fallback": (
        "A bot the app brought was late, failed or answered an illegal move: the basic bot moved "
        "for it (the move follows). reason: timeout, failed, bad_answer, illegal or disabled.",
        {"seat": _SEAT, "reason": {"type": "string", "enum": list(REASONS)}},
    ),
    "turn_timed_out": (
        "A seat's clock ran out: the server acted for it.",
        {"seat": _SEAT, "deadline": _nullable({"type": "string", "format": "date-time"})},
    ),
    "seat_away": ("A seat timed out too often in a row: the server plays for it.", {"seat": _SEAT}),
    "seat_back": ("The seat's player acted again (or called back).", {"seat": _SEAT}),
    "match_found": (
        "Quick play: the table is full (or its wait ran out and bots took the open seats): it starts.",
        {"bots": {"type": "array", "items": _SEAT, "description": "Seats bots took at the deadline"}},
    ),
    "quick_play_expired": ("Quick play: the wait ran out with no bots asked for: the table closes.", {}),
    "rematch_proposed": ("After the game, a seated player asked for a rematch.", {"seat": _SEAT}),
    "rematch_accepted": ("Another seated player accepted the rematch.", {"seat": _SEAT}),
    "rematch_started": (
        "Every person accepted: the rematch table started, seats moved one place on.",
        {"new_table": {**_INT, "description": "The rematch table's id"}},
    ),
    "tournament_table": (
        "This table plays a deal set of a duplicate tournament (docs/tournaments.md): its first event.",
        {"tournament": _INT, "deal_set": _INT, "rotation": _INT},
    ),
    "tournament_progress": (
        "A table of the tournament finished: how many have; status finished on its last one.",
        {
            "tournament": _INT,
            "tables_finished": _INT,
            "tables_total": _INT,
            "status": {"type": "string", "enum": ["running", "finished"]},
        },
    ),
    "tournament_next_table": (
        "A tournament with people: the table that starts now that this one is over.",
        {"tournament": _INT, "next_table": {**_INT, "description": "The next table's id"}},
    ),
}
_LOGGED = {"seq": _INT, "hand": _INT}  # every logged event: its move's sequence number, its hand

# Sent by streams only, built for the viewer when it is sent.
STREAM_ONLY: dict[str, tuple[str, dict[str, Any]]] = {
    "state": (
        "First event of a new table stream: the table as you see it.",
        {"state": _ref("TableOut")},
    ),
    "tables": (
        "First event of a new player stream: each of your unfinished tables.",
        {"tables": {"type": "array", "items": _ref("TableOut")}},
    ),
    "your_turn": (
        "It is your turn: what you may do, and by when.",
        {
            "seq": _INT,
            "version": _INT,
            "hand": _INT,
            "phase": _ref("PhaseEnum"),
            "seat": _SEAT,
            "legal_actions": _ref("LegalOut"),
            "deadline": _nullable({"type": "string", "format": "date-time"}),
        },
    ),
}


# Sent by webhooks only (games/webhooks, a body of type `table.reminder`): never in the log or a
# stream. `seq` and `hand` are the table's version and hand when it was sent (a reminder is no move).
WEBHOOK_ONLY: dict[str, tuple[str, dict[str, Any]]] = {
    "turn_reminder": (
        "A correspondence turn runs out soon: the seats still to act, and their deadline "
        "(docs/bots-and-clocks.md#correspondence-tables).",
        {
            "seats": {"type": "array", "items": _SEAT, "minItems": 1},
            "deadline": {"type": "string", "format": "date-time"},
        },
    ),
}


_CARDS3 = ["QS", "AH", "KH"]
_TABLE_EXAMPLE: dict[str, Any] = {
    "id": 12,
    "status": "open",
    "version": 2,
    "options": {
        "players": 4,
        "target_score": 100,
        "variant": "classic",
        "omnibus_card": "JD",
        "tie_rule": "play_on",
    },
    "clocks": {"pass": 60, "play": 30, "moon": 30, "away_after": 2},
    "bot_think_ms": None,
    "bot_pace_ms": 700,
    "deadline": None,
    "seats": [
        {"position": p, "player": player, "name": name, "bot": bot, "away": False, "timeouts": 0}
        for p, player, name, bot in (
            (0, 7, "Ada", None),
            (1, None, None, "basic"),
            (2, None, None, None),
            (3, None, None, None),
        )
    ],
    "your_seat": 0,
    "game": None,
    "rematch_of": None,
    "rematch": None,
    "visibility": "public",
    "invited": [],
    "spectator_delay": None,
    "delayed": False,
    "spectators": 0,
    "rated": False,
    "hints": False,
}
# An example of each event's own fields (a logged event also has `seq` and `hand`).
EXAMPLES: dict[str, dict[str, Any]] = {
    "game_started": {},
    "seat_taken": {"seat": 0, "player": 7, "name": "Ada"},
    "seat_left": {"seat": 0, "player": 7},
    "bot_added": {"seat": 1, "level": "basic"},
    "bot_fallback": {"seat": 1, "reason": "timeout"},
    "hand_started": {"dealer": 0, "pass_direction": "left", "deal_commitment": "9f2c" + "0" * 60},
    "cards_dealt": {
        "seat": 0,
        "cards": ["2C", "7C", "QS", "AH", "KH", "3D", "9D", "TD", "4S", "8S", "JS", "5H", "6H"],
    },
    "pass_submitted": {"seat": 2},
    "cards_passed": {"seat": 0, "to": 1, "cards": _CARDS3},
    "passes_complete": {},
    "cards_received": {"seat": 0, "from": 3, "cards": ["2H", "3H", "JC"]},
    "card_played": {"seat": 1, "card": "2C"},
    "hearts_broken": {"seat": 3, "card": "5H"},
    "trick_won": {"seat": 2, "trick": 4, "cards": ["9S", "QS", "KS", "5H"], "points": 14},
    "trick_carried": {"leader": 4, "cards": ["3C", "3C", "2D", "3C", "4H", "3C"]},
    "moon_shot": {"seat": 2, "choices": ["subtract", "add"]},
    "moon_chosen": {"seat": 2, "choice": "add"},
    "hand_scored": {
        "points": [26, 0, 26, 26],
        "totals": [40, 12, 26, 31],
        "moon": {"seat": 1, "choice": "add"},
    },
    "hand_revealed": {
        "record": {
            "hand": 1,
            "seed": "5e1d" + "0" * 60,
            "deal_commitment": "9f2c" + "0" * 60,
            "dealer": 0,
            "pass_direction": "left",
            "dealt": [["2C", "QS"], ["3C", "AH"], ["4C", "KH"], ["5C", "JD"]],
            "widow": [],
            "passes": [{"to": 1, "cards": _CARDS3}],
            "tricks": [{"leader": 0, "cards": ["2C", "3C", "4C", "5C"], "winner": 3}],
            "taken_points": [13, 0, 0, 13],
            "moon": None,
            "points": [13, 0, 0, 13],
            "totals": [13, 0, 0, 13],
        }
    },
    "game_over": {"winners": [1], "totals": [104, 38, 71, 99], "seed": "a07b" + "0" * 60},
    "table_abandoned": {},
    "table_finished": {"status": "finished", "winners": [1], "totals": [104, 38, 71, 99]},
    "ratings_changed": {
        "family": "classic-4",
        "changes": [{"seat": 0, "place": 2, "mu": 26.2, "sigma": 8.17}],
    },
    "turn_timed_out": {"seat": 3, "deadline": "2026-05-01T12:00:30Z"},
    "seat_away": {"seat": 3},
    "seat_back": {"seat": 3},
    "match_found": {"bots": [2, 3]},
    "quick_play_expired": {},
    "rematch_proposed": {"seat": 0},
    "rematch_accepted": {"seat": 2},
    "rematch_started": {"new_table": 43},
    "tournament_table": {"tournament": 3, "deal_set": 0, "rotation": 1},
    "tournament_progress": {"tournament": 3, "tables_finished": 5, "tables_total": 8, "status": "running"},
    "tournament_next_table": {"tournament": 3, "next_table": 44},
    "turn_reminder": {"seats": [0], "deadline": "2026-05-03T12:00:00Z"},
    "state": {"state": _TABLE_EXAMPLE},
    "tables": {"tables": [_TABLE_EXAMPLE]},
    "your_turn": {
        "seq": 31,
        "version": 31,
        "hand": 2,
        "phase": "playing",
        "seat": 0,
        "legal_actions": {"type": "play", "cards": ["2C"]},
        "deadline": "2026-05-01T12:00:30Z",
    },
}


def _component(
    kind: str, description: str, fields: dict[str, Any], logged: bool, streamed: bool = True
) -> dict[str, Any]:
    own = {**(_LOGGED if logged else {}), **fields}
    stream = {
        "table": {"type": "integer", "description": "stream events only"},
        "id": {"type": "string", "description": "stream position: resume with Last-Event-ID"},
    }
    example = {"type": kind, **({"seq": 30, "hand": 2} if logged else {}), **EXAMPLES[kind]}
    return {
        "type": "object",
        "description": description,
        "properties": {
            "type": {"type": "string", "enum": [kind]},
            **own,
            **(stream if streamed else {}),
        },
        "required": ["type", *own],
        "additionalProperties": False,
        "example": example,
    }


def _union(names: list[str], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "oneOf": [_ref(f"Event_{k}") for k in names],
        "discriminator": {
            "propertyName": "type",
            "mapping": {k: f"#/components/schemas/Event_{k}" for k in names},
        },
    }


def event_components() -> dict[str, dict[str, Any]]:
    """One schema per event type (`Event_<type>`); `Event`, any logged event (the REST events
    list), and `StreamEvent`, any event a stream sends; both told apart by `type`. The webhook-only
    events are in neither union (the webhook body's schema lists them)."""
    out = {f"Event_{k}": _component(k, d, f, True) for k, (d, f) in EVENTS.items()}
    out |= {f"Event_{k}": _component(k, d, f, False) for k, (d, f) in STREAM_ONLY.items()}
    out |= {f"Event_{k}": _component(k, d, f, True, streamed=False) for k, (d, f) in WEBHOOK_ONLY.items()}
    out["Event"] = _union(list(EVENTS), "An event of the table's log, as the caller may see it")
    out["BotLevelEnum"] = {"type": "string", "enum": list(LEVELS), "description": "A built-in bot level"}
    out["SeatLevel"] = {
        "description": "A seat's bot: a built-in level, or ext:<name> for a bot the app brought "
        "(docs/bots-byo.md)",
        "anyOf": [_ref("BotLevelEnum"), {"type": "string", "pattern": LEVEL_PATTERN}],
    }
    out["StreamEvent"] = _union(
        [*EVENTS, *STREAM_ONLY],
        "An event of a stream: a logged event (with `table` and `id`) or state, tables, your_turn",
    )
    return out


ErrorResponses = Callable[[tuple[Code, ...]], dict[str, Any]]  # an operation's codes -> its error responses


def _stream_operation(
    op: str, summary: str, params: list[dict[str, Any]], errors: dict[str, Any]
) -> dict[str, Any]:
    text = {"schema": {"type": "string"}}
    ok = {
        "description": (
            "A stream that does not end: Server-Sent Events (`id`, `event` = the type, `data` = one"
            " `StreamEvent` as JSON) or NDJSON (one `StreamEvent` object per line), keep-alives every"
            " 15 s. Read it incrementally: it is text, never one JSON document."
        ),
        "content": {"text/event-stream": text, "application/x-ndjson": text},
        "x-stream-event": _ref("StreamEvent"),
    }
    responses: dict[str, Any] = {"200": ok}
    if "table_id" in [p["name"] for p in params]:
        responses["204"] = {"description": "the table is over and nothing is left after Last-Event-ID"}
    return {
        "get": {
            "operationId": op,
            "summary": summary,
            "description": "Each event is a `StreamEvent` (see components/schemas), told apart by `type`.",
            "tags": ["streams"],
            "security": [{"bearer": []}, {}],  # or a `ticket`, for a client that cannot send headers
            "parameters": [
                *params,
                {
                    "name": "format",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["sse", "ndjson"]},
                    "description": "sse (default; also `Accept: application/x-ndjson` picks ndjson)",
                },
                {
                    "name": "ticket",
                    "in": "query",
                    "schema": _STR,
                    "description": "a stream ticket (POST .../stream-tickets) instead of an Authorization"
                    " header, for a browser's EventSource: it opens this one stream, for 60 s",
                },
                {
                    "name": "last_event_id",
                    "in": "query",
                    "schema": _STR,
                    "description": "resume after this id (as the Last-Event-ID header)",
                },
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "schema": _STR,
                    "description": "resume right after this event id",
                },
            ],
            "responses": {**responses, **errors},
        }
    }


def stream_paths(error_responses: ErrorResponses) -> dict[str, Any]:
    """The two streams' operations by path (they are plain async Django views, not DRF's), with
    the error responses the adapter gives each one's codes."""
    table_id = {"name": "table_id", "in": "path", "required": True, "schema": _INT}
    stream = (
        Code.invalid_format,
        Code.invalid_last_event_id,
        Code.ticket_invalid,
        Code.ticket_expired,
        Code.quota_exceeded,  # the stream quotas (games/quotas.py)
    )
    return {
        "/api/v1/tables/{table_id}/stream": _stream_operation(
            "streamTableEvents",
            "The table's events as you may see them, live",
            [table_id],
            error_responses((*stream, Code.not_found)),
        ),
        "/api/v1/me/stream": _stream_operation(
            "streamMyEvents",
            "Your events at every table you sit at, and your turns",
            [],
            error_responses((*stream, Code.player_token_required)),
        ),
    }
