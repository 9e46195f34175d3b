"""The JSON Schema of a webhook delivery's body (docs/schemas/webhook-body.schema.json), built from
the OpenAPI document's event schemas; `python -m games.contracts.webhook_schema` prints it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from games.contracts.openapi import DIALECT, json_schema, openapi_document

_STREAM_ONLY = ("id", "table")  # properties of an Event_<type> that only stream events carry
_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
ERASED_TYPE = "player.erased"  # games.webhooks.ERASED_TYPE (the contracts import no service)
_ERASED_BODY: dict[str, Any] = {
    "description": "one of the app's players was erased (docs/privacy.md#erasure): no table, no events;"
    " their external id is not sent (it is erased too): keep the player id to find your user",
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid", "description": "the delivery id (webhook-id)"},
        "type": {"const": ERASED_TYPE},
        "webhook": {**_INT, "description": "the endpoint it was recorded for"},
        "created_at": {"type": "string", "format": "date-time", "description": "when it was recorded (UTC)"},
        "player": {**_INT, "description": "the erased player's id"},
        "erased_at": {"type": "string", "format": "date-time", "description": "when they were erased (UTC)"},
    },
    "required": ["id", "type", "webhook", "created_at", "player", "erased_at"],
    "additionalProperties": False,
}


def body_schema(
    openapi: dict[str, Any], event_types: Iterable[str], body_type: str, reminder_type: str | None = None
) -> dict[str, Any]:
    """The schema of every body the service POSTs: one move's events of `event_types`, each as
    the OpenAPI document's `Event_<type>` describes it (without the stream-only properties); with
    `reminder_type`, also a correspondence turn's reminder, a body of that type holding exactly one
    `turn_reminder` event."""
    components: dict[str, Any] = openapi["components"]["schemas"]
    kinds = list(event_types)
    unknown = [k for k in kinds if f"Event_{k}" not in components]
    if unknown:
        raise ValueError(f"event types without an Event_<type> schema in the OpenAPI document: {unknown}")
    refs: set[str] = set()
    defs: dict[str, Any] = {}
    for kind in kinds:
        event = json_schema(components[f"Event_{kind}"], refs)
        event["properties"] = {k: v for k, v in event["properties"].items() if k not in _STREAM_ONLY}
        event["required"] = [k for k in event["required"] if k not in _STREAM_ONLY]
        defs[kind] = event
    done: set[str] = set()
    while pending := sorted(refs - done):  # the components the events refer to, transitively
        for name in pending:
            defs[name] = json_schema(components[name], refs)
            done.add(name)
    envelope = {
        "id": {
            "type": "string",
            "format": "uuid",
            "description": "the delivery id, also the webhook-id header: the same on every attempt"
            " and redelivery, so receivers dedupe on it",
        },
        "type": {"const": body_type, "description": "what the body holds: the public events of one move"},
        "webhook": {**_INT, "description": "the endpoint it was recorded for"},
        "table": {**_INT, "description": "the table whose move this is"},
        "seq": {
            "type": "integer",
            "minimum": 1,
            "description": "the move: the table's version after it (GET tables/{id}/events?after=seq-1)",
        },
        "hand": {**_INT, "description": "the table's hand number at that move (0 before the first deal)"},
        "created_at": {
            "type": "string",
            "format": "date-time",
            "description": "when the move was made (UTC); an attempt's own time is its webhook-timestamp",
        },
        "events": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/event"},
            "description": "the move's public events the endpoint subscribes to, in the order they happened",
        },
    }
    reminder: dict[str, Any] = {}
    if reminder_type is not None:
        if "turn_reminder" not in kinds:
            raise ValueError("a reminder body holds a turn_reminder event: list it in event_types")
        envelope["type"] = {
            "enum": [body_type, reminder_type],
            "description": f"what the body holds: {body_type}, the public events of one move; "
            f"{reminder_type}, a correspondence turn's reminder (one turn_reminder event, and `seq` is "
            "the table's version when it was sent: a reminder is not a move)",
        }
        reminder = {
            "if": {"properties": {"type": {"const": reminder_type}}},
            "then": {"properties": {"events": {"items": {"$ref": "#/$defs/turn_reminder"}, "maxItems": 1}}},
            "else": {"properties": {"events": {"items": {"not": {"$ref": "#/$defs/turn_reminder"}}}}},
        }
    table_body = {
        "type": "object",
        "properties": envelope,
        "required": list(envelope),
        "additionalProperties": False,
        **reminder,
    }
    return {
        "$schema": DIALECT,
        "title": "Hearts webhook delivery",
        "description": "The JSON body of every webhook POST (docs/webhooks.md), exactly as this version"
        " sends it; a later version may add fields, so a receiver should not refuse one it does not know."
        f" A table's events, or an app's own event ({ERASED_TYPE}).",
        "type": "object",
        "oneOf": [table_body, {"$ref": f"#/$defs/{ERASED_TYPE}"}],
        "$defs": {
            ERASED_TYPE: _ERASED_BODY,
            "event": {
                "description": "one public event, as GET tables/{id}/events shows it to a spectator",
                "oneOf": [{"$ref": f"#/$defs/{kind}"} for kind in kinds],
            },
            **defs,
        },
    }


def main() -> None:
    """Print the schema, as committed in docs/schemas/webhook-body.schema.json."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    import django

    django.setup()
    from games import webhooks

    schema = body_schema(
        openapi_document(), webhooks.PUBLIC_EVENT_TYPES, webhooks.BODY_TYPE, webhooks.REMINDER_BODY_TYPE
    )
    print(json.dumps(schema, indent=2))


if __name__ == "__main__":
    main()
