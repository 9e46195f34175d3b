"""The service's published contracts, built from its OpenAPI document: every event's schema, and the
JSON Schemas of the bodies it POSTs (webhook deliveries, brought bots' turns).

- `openapi`: the OpenAPI document as served, and its schemas as JSON Schema 2020-12.
- `event_schemas`: one schema per event type and the two streams' operations (an OpenAPI hook's
  content: games/api/streams.py adds them with the adapter's error responses).
- `webhook_schema`: a webhook delivery's body (docs/schemas/webhook-body.schema.json).
- `bot_turn_schema`: a brought bot's turn (docs/schemas/bot-turn.schema.json).
- `player_export_schema`: a player's data export (docs/schemas/player-export.schema.json).

They describe what the adapters send and never import them (pyproject.toml's import layers).
"""
