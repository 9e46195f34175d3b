"""The JSON Schema of a player's data export (docs/schemas/player-export.schema.json, docs/privacy.md),
built around the OpenAPI document's GameExportOut (a finished game: GET tables/{id}/export) and
TableOut (a table as its player reads it: GET tables/{id}); `python -m
games.contracts.player_export_schema` prints it, and GET /api/v1/exports/schema serves it."""

from __future__ import annotations

import json
import os
from typing import Any

from games.contracts.openapi import DIALECT, json_schema, openapi_document

FORMAT = "hearts-player-export/1"  # the document's `format` (games.services.exports.FORMAT)
SCHEMA_PATH = "/api/v1/exports/schema"  # where the service serves this schema
STATUSES = ("open", "passing", "playing", "moon_choice", "finished", "abandoned")  # a table's
_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_TIME_OR_NULL: dict[str, Any] = {"type": ["string", "null"], "format": "date-time"}
_NUMBER: dict[str, Any] = {"type": "number"}


def _object(description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, all present (null where a value may be absent)."""
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _list(item: dict[str, Any], description: str) -> dict[str, Any]:
    return {"type": "array", "items": item, "description": description}


def _nullable_ref(name: str, description: str) -> dict[str, Any]:
    return {"anyOf": [{"$ref": f"#/$defs/{name}"}, {"type": "null"}], "description": description}


def export_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    """The schema of every player export document the service writes."""
    components: dict[str, Any] = openapi["components"]["schemas"]
    refs = {"GameExportOut", "TableOut"}
    defs: dict[str, Any] = {}
    while pending := sorted(refs - set(defs)):  # the components they refer to, transitively
        for name in pending:
            defs[name] = json_schema(components[name], refs)
    profile = _object(
        "the player as stored (an erased player's name is their pseudonym)",
        {
            "id": _INT,
            "app": {"type": ["integer", "null"], "description": "the player's app; null for a guest"},
            "name": {"type": "string"},
            "external_id": {"type": "string", "description": "the app's own id for the player"},
            "language": {"type": "string", "description": "the language chosen; empty: none"},
            "created_at": _TIME,
        },
    )
    token = _object(
        "one bearer token of the player: its times only, never the token or its hash",
        {"created_at": _TIME, "revoked_at": _TIME_OR_NULL, "expires_at": _TIME_OR_NULL},
    )
    table = _object(
        "a table the player sits at",
        {
            "id": _INT,
            "status": {"type": "string", "enum": list(STATUSES)},
            "seat": {**_INT, "description": "the player's seat"},
            "created_at": _TIME,
            "finished_at": _TIME_OR_NULL,
            "options": {"type": "object", "description": "the table's options (GET tables/{id} options)"},
            "game": _nullable_ref(
                "GameExportOut", "a finished game's whole document (GET tables/{id}/export); null otherwise"
            ),
            "view": _nullable_ref(
                "TableOut",
                "a table not finished, as the player reads it (GET tables/{id}): no card they may not "
                "see; null for a finished one",
            ),
        },
    )
    move = _object(
        "one move of the player's own seat",
        {
            "table": _INT,
            "seq": {**_INT, "description": "the table version the move produced"},
            "hand": _INT,
            "kind": {"type": "string", "description": "join, start, pass, play, moon, leave, back..."},
            "seat": {"type": ["integer", "null"]},
            "action": {
                "type": ["object", "null"],
                "description": "the pass, play or moon choice as submitted; null for other moves",
            },
            "at": _TIME,
        },
    )
    rating = _object(
        "the player's current rating in one family",
        {
            "family": {"type": "string"},
            "mu": _NUMBER,
            "sigma": _NUMBER,
            "score": {**_NUMBER, "description": "mu - 3 sigma"},
            "games": _INT,
            "updated_at": _TIME,
        },
    )
    change = _object(
        "one rated game's effect on the player's rating",
        {
            "table": _INT,
            "family": {"type": "string"},
            "seat": _INT,
            "place": {"type": "integer", "minimum": 1},
            "mu_before": _NUMBER,
            "sigma_before": _NUMBER,
            "mu_after": _NUMBER,
            "sigma_after": _NUMBER,
            "at": _TIME,
        },
    )
    invite = _object(
        "an invite code the player made: its hint only, never the code or its hash",
        {
            "table": _INT,
            "hint": {"type": "string"},
            "created_at": _TIME,
            "expires_at": _TIME_OR_NULL,
            "uses_left": {"type": ["integer", "null"], "description": "null: no limit"},
            "revoked_at": _TIME_OR_NULL,
        },
    )
    device = _object(
        "a device the player receives notifications on: never its keys, only its token's last characters",
        {
            "id": _INT,
            "kind": {"type": "string", "enum": ["fcm", "apns", "webpush"]},
            "label": {"type": "string"},
            "topic": {"type": "string"},
            "language": {"type": "string"},
            "token_end": {"type": "string", "maxLength": 6},
            "created_at": _TIME,
            "expires_at": _TIME_OR_NULL,
            "last_pushed_at": _TIME_OR_NULL,
        },
    )
    envelope = {
        "format": {"const": FORMAT, "description": "this document's format and version"},
        "schema": {"const": SCHEMA_PATH, "description": "the URL path of this schema on the service"},
        "generated_at": {**_TIME, "description": "when the document was made"},
        "profile": profile,
        "tokens": _list(token, "every bearer token, oldest first"),
        "tables": _list(table, "every table the player sits at, by id"),
        "moves": _list(move, "the player's own seat's moves at those tables, by table and seq"),
        "ratings": _list(rating, "current ratings"),
        "rating_history": _list(change, "every rated game's change, oldest first"),
        "invites": _list(invite, "invite codes the player made"),
        "devices": _list(device, "devices registered for notifications"),
    }
    return {
        "$schema": DIALECT,
        "title": "Hearts player data export",
        "description": "One player's data as the service keeps it (docs/privacy.md): what they may see "
        "and nothing else; a later format version may add fields.",
        "type": "object",
        "properties": envelope,
        "required": list(envelope),
        "additionalProperties": False,
        "$defs": defs,
    }


def main() -> None:
    """Print the schema, as committed in docs/schemas/player-export.schema.json."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    import django

    django.setup()
    print(json.dumps(export_schema(openapi_document()), indent=2))


if __name__ == "__main__":
    main()
