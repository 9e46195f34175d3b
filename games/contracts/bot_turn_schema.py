"""The JSON Schema of the body the service POSTs to a bot an app brought (docs/bots-byo.md,
docs/schemas/bot-turn.schema.json), built from the OpenAPI document's GameOut and LegalOut: the
`view` is exactly a seat's `game` of GET tables/{id}. `python -m games.contracts.bot_turn_schema`
prints it."""

from __future__ import annotations

import json
import os
from typing import Any

from games.contracts.openapi import DIALECT, json_schema, openapi_document

_INT: dict[str, Any] = {"type": "integer", "minimum": 0}


def turn_schema(openapi: dict[str, Any], body_type: str) -> dict[str, Any]:
    """The schema of every turn the service sends a brought bot."""
    components: dict[str, Any] = openapi["components"]["schemas"]
    refs = {"GameOut", "LegalOut"}
    defs: dict[str, Any] = {}
    while pending := sorted(refs - set(defs)):  # the components they refer to, transitively
        for name in pending:
            defs[name] = json_schema(components[name], refs)
    envelope = {
        "id": {"type": "string", "description": "this call's id, also the webhook-id header"},
        "type": {"const": body_type, "description": "what the body holds: one seat's turn"},
        "bot": {**_INT, "description": "the bot endpoint's id"},
        "name": {"type": "string", "description": "the bot endpoint's name (the seat's level is ext:<name>)"},
        "table": {**_INT, "description": "the table"},
        "version": {**_INT, "description": "the table's version the turn was asked at"},
        "seat": {**_INT, "description": "the seat to act"},
        "hand": {**_INT, "description": "the hand being played"},
        "timeout_ms": {**_INT, "description": "how long the answer may take; later, the basic bot moves"},
        "view": {
            "$ref": "#/$defs/GameOut",
            "description": "the seat's own view: what a player in that seat reads (GET tables/{id} game)",
        },
        "legal_actions": {"$ref": "#/$defs/LegalOut", "description": "what the seat may do (also in view)"},
    }
    return {
        "$schema": DIALECT,
        "title": "Hearts bot turn",
        "description": "The JSON body POSTed to a bot an app brought when its seat must act "
        "(docs/bots-byo.md); a later version may add fields, so a bot should not refuse one it does "
        "not know.",
        "type": "object",
        "properties": envelope,
        "required": list(envelope),
        "additionalProperties": False,
        "$defs": defs,
    }


def main() -> None:
    """Print the schema, as committed in docs/schemas/bot-turn.schema.json."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    import django

    django.setup()
    from games import extbots

    print(json.dumps(turn_schema(openapi_document(), extbots.BODY_TYPE), indent=2))


if __name__ == "__main__":
    main()
