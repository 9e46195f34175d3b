"""The webhooks' vocabulary: the event types an app can receive, the header, the queue, and the
settings and refusals the other webhook modules share."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from games.errors import ServiceError
from games.models import WebhookDelivery

# Every event type the service logs for everyone (to = None). Events meant for one seat
# (HIDDEN_EVENT_TYPES: a seat's dealt, passed and received cards) are never delivered.
PUBLIC_EVENT_TYPES = (
    "seat_taken",
    "seat_left",
    "bot_added",
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
    "table_finished",
    "table_abandoned",
    "turn_timed_out",
    "seat_away",
    "seat_back",
)
HIDDEN_EVENT_TYPES = ("cards_dealt", "cards_passed", "cards_received")
SIGNATURE_HEADER = "Hearts-Signature"
QUEUE = "webhooks"  # CELERY_TASK_ROUTES sends games.deliver_webhook there
SECRET_PREFIX = "whsec_"
Status = WebhookDelivery.Status


def error(code: str, message: str, *, kind: str, **details: Any) -> Exception:
    """A refusal with the API's codes."""
    return ServiceError(code, message, kind=kind, **details)


def conf(name: str) -> Any:
    return getattr(settings, name)
