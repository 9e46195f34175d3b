"""The OpenAPI description of every event type and of the two stream endpoints (an OpenAPI hook)."""

from __future__ import annotations

from typing import Any

_INT: dict[str, Any] = {"type": "integer"}
_STR: dict[str, Any] = {"type": "string"}
_CARD: dict[str, Any] = {"type": "string", "description": "a card, like QS or TH"}
_CARDS: dict[str, Any] = {"type": "array", "items": _CARD}
_INTS: dict[str, Any] = {"type": "array", "items": _INT}
_SEAT: dict[str, Any] = {"type": "integer", "description": "seat position, 0 first"}
_ANY: dict[str, Any] = {"type": "object", "additionalProperties": True}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


# type -> (description, its own fields: all of them are always present)
EVENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "game_started": ("Every seat is taken: the first hand is dealt next.", {}),
    "seat_taken": ("A player sat down.", {"seat": _SEAT, "player": _INT, "name": _STR}),
    "seat_left": ("A player gave up their seat before the start.", {"seat": _SEAT, "player": _INT}),
    "bot_added": ("A bot took a seat.", {"seat": _SEAT, "level": _STR}),
    "hand_started": (
        "A hand was dealt; the commitment is SHA-256 of the table id and the hand's seed.",
        {"dealer": _SEAT, "pass_direction": _STR, "deal_commitment": _STR},
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
        {"seat": _SEAT, "choices": {"type": "array", "items": _STR}},
    ),
    "moon_chosen": ("The shooter's choice.", {"seat": _SEAT, "choice": _STR}),
    "hand_scored": (
        "Points of the hand and running totals.",
        {"points": _INTS, "totals": _INTS, "moon": _nullable(_ANY)},
    ),
    "hand_revealed": (
        "The finished hand's full record, with its seed (public once it is over).",
        {"record": _ANY},
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
    "turn_timed_out": (
        "A seat's clock ran out: the server acted for it.",
        {"seat": _SEAT, "deadline": _nullable(_STR)},
    ),
    "seat_away": ("A seat timed out too often in a row: the server plays for it.", {"seat": _SEAT}),
    "seat_back": ("The seat's player acted again (or called back).", {"seat": _SEAT}),
}
_LOGGED = {"seq": _INT, "hand": _INT}  # every logged event: its move's sequence number, its hand

# Sent by streams only, built for the viewer when it is sent.
STREAM_ONLY: dict[str, tuple[str, dict[str, Any]]] = {
    "state": (
        "First event of a new table stream: the table as you see it.",
        {"state": {"$ref": "#/components/schemas/TableOut"}},
    ),
    "tables": (
        "First event of a new player stream: each of your unfinished tables.",
        {"tables": {"type": "array", "items": {"$ref": "#/components/schemas/TableOut"}}},
    ),
    "your_turn": (
        "It is your turn: what you may do, and by when.",
        {
            "seq": _INT,
            "version": _INT,
            "hand": _INT,
            "phase": _STR,
            "seat": _SEAT,
            "legal_actions": {"$ref": "#/components/schemas/LegalOut"},
            "deadline": _nullable({"type": "string", "format": "date-time"}),
        },
    ),
}


def _component(kind: str, description: str, fields: dict[str, Any], logged: bool) -> dict[str, Any]:
    own = {**(_LOGGED if logged else {}), **fields}
    stream = {"id": {"type": "string", "description": "stream position: resume with Last-Event-ID"}}
    return {
        "type": "object",
        "description": description,
        "properties": {
            "type": {"type": "string", "enum": [kind]},
            **own,
            "table": {"type": "integer", "description": "stream events only"},
            **stream,
        },
        "required": ["type", *own],
        "additionalProperties": False,
    }


def event_components() -> dict[str, dict[str, Any]]:
    """One schema per event type (`Event_<type>`), and `StreamEvent`, any of them by `type`."""
    out = {f"Event_{k}": _component(k, d, f, True) for k, (d, f) in EVENTS.items()}
    out |= {f"Event_{k}": _component(k, d, f, False) for k, (d, f) in STREAM_ONLY.items()}
    names = [*EVENTS, *STREAM_ONLY]
    out["StreamEvent"] = {
        "oneOf": [{"$ref": f"#/components/schemas/Event_{k}"} for k in names],
        "discriminator": {
            "propertyName": "type",
            "mapping": {k: f"#/components/schemas/Event_{k}" for k in names},
        },
    }
    return out


def _stream_operation(op: str, summary: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    errors = {
        str(code): {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
        }
        for code, text in (
            (400, "bad Last-Event-ID or format"),
            (401, "no or bad credentials"),
            (404, "no such table"),
            (422, "a player token is needed"),
        )
    }
    event = {"schema": {"$ref": "#/components/schemas/StreamEvent"}}
    return {
        "get": {
            "operationId": op,
            "summary": summary,
            "tags": ["streams"],
            "security": [{"bearer": []}],
            "parameters": [
                *params,
                {
                    "name": "format",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["sse", "ndjson"]},
                    "description": "sse (default; also `Accept: application/x-ndjson` picks ndjson)",
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
            "responses": {
                "200": {
                    "description": (
                        "Server-Sent Events (`id`, `event` = type, `data` = the event as JSON) or NDJSON"
                        " (one event object per line); keep-alives every 15 s"
                    ),
                    "content": {"text/event-stream": event, "application/x-ndjson": event},
                },
                "204": {"description": "the table is over and nothing is left after Last-Event-ID"},
                **errors,
            },
        }
    }


def add_streams(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the streams are plain async Django views, described here."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(event_components())
    table_id = {"name": "table_id", "in": "path", "required": True, "schema": _INT}
    result["paths"]["/api/v1/tables/{table_id}/stream"] = _stream_operation(
        "v1_tables_stream", "The table's events as you may see them, live", [table_id]
    )
    result["paths"]["/api/v1/me/stream"] = _stream_operation(
        "v1_me_stream", "Your events at every table you sit at, and your turns", []
    )
    return result
