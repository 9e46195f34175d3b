"""Bots that apps bring (docs/bots-byo.md): an app registers a bot endpoint, a seat names it with
the level `ext:<name>`, and when that seat must act the service POSTs it the seat's own view and
legal actions, signed like webhooks (Standard Webhooks headers, a `whsec_` secret shown once).

- `endpoints`: registering, listing, changing and deleting an app's bot endpoints, their secrets,
  the `ext:` levels that name them, and the counters of their answers and fallbacks by reason.
- `calls`: the signed request, the POSTs (made together for seats that act at once, each with a
  hard deadline of its endpoint's `timeout_ms`) and reading the answer. The services ask outside
  any transaction and apply the answers in one (games.services.botturns); a late, failing or
  illegal answer makes the `basic` bot move instead, counted and announced (`bot_fallback`).
"""

from games.extbots.calls import BODY_TYPE, Answer, ask, request_body
from games.extbots.endpoints import (
    BOT_PAGES,
    BOTS_MAX,
    LEVEL_PATTERN,
    NAME,
    NAME_MAX,
    PREFIX,
    REASONS,
    TIMEOUT_DEFAULT,
    TIMEOUT_LIMITS,
    body,
    check_level,
    count,
    endpoint_create,
    endpoint_delete,
    endpoint_of,
    endpoint_update,
    endpoints_of,
    fallbacks_of,
    is_external,
    secret_of,
    secret_rotate,
)

__all__ = [
    "BODY_TYPE",
    "BOTS_MAX",
    "BOT_PAGES",
    "LEVEL_PATTERN",
    "NAME",
    "NAME_MAX",
    "PREFIX",
    "REASONS",
    "TIMEOUT_DEFAULT",
    "TIMEOUT_LIMITS",
    "Answer",
    "ask",
    "body",
    "check_level",
    "count",
    "endpoint_create",
    "endpoint_delete",
    "endpoint_of",
    "endpoint_update",
    "endpoints_of",
    "fallbacks_of",
    "is_external",
    "request_body",
    "secret_of",
    "secret_rotate",
]
