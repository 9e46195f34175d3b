"""The JSON Schema of a webhook delivery's body (docs/schemas/webhook-body.schema.json), built from
the event definitions the OpenAPI document uses; `python -m games.api.webhook_schema` prints it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from games.api.event_schemas import EVENTS

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_INT: dict[str, Any] = {"type": "integer", "minimum": 0}


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 schema as plain JSON Schema: `nullable: true` becomes a `null` in `type`."""
    out = {k: _json_schema(v) if isinstance(v, dict) else v for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable"):
        out["type"] = [schema["type"], "null"]
    return out


def _event(kind: str) -> dict[str, Any]:
    description, fields = EVENTS[kind]
    own = {
        "type": {"const": kind},
        "seq": {**_INT, "description": "the move (table version) that logged it: the body's seq"},
        "hand": {**_INT, "description": "the hand it belongs to (0 before the first deal)"},
        **{name: _json_schema(field) for name, field in fields.items()},
    }
    return {
        "type": "object",
        "description": description,
        "properties": own,
        "required": list(own),
        "additionalProperties": False,
    }


def body_schema(event_types: Iterable[str], body_type: str) -> dict[str, Any]:
    """The schema of every body the service POSTs: one move's public `event_types` events."""
    kinds = list(event_types)
    unknown = [k for k in kinds if k not in EVENTS]
    if unknown:
        raise ValueError(f"event types without a definition in games/api/event_schemas.py: {unknown}")
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
    return {
        "$schema": DIALECT,
        "title": "Hearts webhook delivery",
        "description": "The JSON body of every webhook POST (docs/webhooks.md), exactly as this version"
        " sends it; a later version may add fields, so a receiver should not refuse one it does not know.",
        "type": "object",
        "properties": envelope,
        "required": list(envelope),
        "additionalProperties": False,
        "$defs": {
            "event": {
                "description": "one public event, as GET tables/{id}/events shows it to a spectator",
                "oneOf": [{"$ref": f"#/$defs/{kind}"} for kind in kinds],
            },
            **{kind: _event(kind) for kind in kinds},
        },
    }


def main() -> None:
    """Print the schema, as committed in docs/schemas/webhook-body.schema.json."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    import django

    django.setup()
    from games import webhooks

    print(json.dumps(body_schema(webhooks.PUBLIC_EVENT_TYPES, webhooks.BODY_TYPE), indent=2))


if __name__ == "__main__":
    main()
