"""The webhooks' vocabulary: the event types an app can receive, the headers, the queue, and the
settings and refusals the other webhook modules share."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from games.errors import ServiceError
from games.models import WebhookDelivery

# Every event type the service logs for everyone (to = None), and turn_reminder (a correspondence
# turn's reminder: delivered, never logged). Events meant for one seat (HIDDEN_EVENT_TYPES: a seat's
# dealt, passed and received cards) are never delivered.
PUBLIC_EVENT_TYPES = (
    "seat_taken",
    "seat_left",
    "bot_added",
    "bot_fallback",
    "game_started",
    "hand_started",
    "pass_submitted",
    "passes_complete",
    "card_played",
    "hearts_broken",
    "trick_won",
    "trick_carried",
    "moon_shot",
    "moon_chosen",
    "hand_scored",
    "hand_revealed",
    "game_over",
    "ratings_changed",
    "table_finished",
    "table_abandoned",
    "turn_timed_out",
    "seat_away",
    "seat_back",
    "match_found",
    "quick_play_expired",
    "rematch_proposed",
    "rematch_accepted",
    "rematch_started",
    "tournament_table",
    "tournament_progress",
    "tournament_next_table",
    "turn_reminder",
)
HIDDEN_EVENT_TYPES = ("cards_dealt", "cards_passed", "cards_received")
# Events of the app itself, not of a table: each is a body of its own type (docs/webhooks.md), with no
# table. `player.erased`: one of the app's players was erased (games.services.erasure).
ERASED_TYPE = "player.erased"
APP_EVENT_TYPES = (ERASED_TYPE,)
# Standard Webhooks (https://www.standardwebhooks.com): the delivery id, the attempt's unix time and
# its signature(s); plus the body's event types and the attempt's number, for routing and logs.
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
EVENT_HEADER = "Hearts-Event"
ATTEMPT_HEADER = "Hearts-Attempt"
BODY_TYPE = "table.events"  # the body's `type`: the public events of one move of a table
REMINDER_BODY_TYPE = "table.reminder"  # ...or a correspondence turn's reminder (one turn_reminder)
QUEUE = "webhooks"  # CELERY_TASK_ROUTES sends games.deliver_webhook there
SECRET_PREFIX = "whsec_"  # then the standard base64 of the signing key's bytes
Status = WebhookDelivery.Status


def error(code: str, message: str, *, kind: str, **details: Any) -> Exception:
    """A refusal with the API's codes."""
    return ServiceError(code, message, kind=kind, **details)


def conf(name: str) -> Any:
    return getattr(settings, name)
