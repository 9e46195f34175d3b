"""Signed webhooks: an app's endpoints, the deliveries recorded with each move, and sending them.

- Recording (`record`, called by `services.record.log`): a move's PUBLIC events (never an event meant
  for one seat, such as cards_dealt or cards_received) become one delivery per matching endpoint,
  in the move's own transaction, so a committed move always has its deliveries and a rolled-back
  one never does. The send is queued after the commit. A correspondence turn's reminder
  (`record_reminder`, called by `services.reminders`) is recorded the same way in the reminder's
  transaction: a body of type `table.reminder` holding one `turn_reminder` event. An app's own
  events (`record_app_event`: `player.erased`, no table) are recorded likewise, in the transaction
  of the change they tell.
- Sending (`attempt`, run by the `games.deliver_webhook` task on the `webhooks` queue, or by the
  embedded sweep's sender thread): claim the row (row lock, a lease on `next_attempt_at`), POST
  outside any transaction with a short timeout, then record the result only if the claim is still
  the current one. Duplicate tasks find the row claimed or done and do nothing; a worker killed
  mid-send leaves a lease that runs out, and the sweep queues the delivery again. Delivery is at
  least once: receivers dedupe on the delivery id (`webhook-id`, the body's `id`).
- Signing: Standard Webhooks (https://www.standardwebhooks.com), by its reference library:
  `webhook-id`, `webhook-timestamp` (unix seconds of the attempt) and `webhook-signature`
  (`v1,<base64 HMAC-SHA256(key, f"{id}.{timestamp}.{body}")>`); receivers verify with
  `standardwebhooks.Webhook(secret).verify(body, headers)`.
- The secret is not stored: an endpoint keeps a random salt, its key is the 32 bytes of
  HMAC-SHA256(WEBHOOK_SECRET_KEY, salt) and its secret `whsec_` + base64(key). The database alone
  cannot sign; rotating WEBHOOK_SECRET_KEY changes every endpoint's secret (rotate one with
  POST .../secret).
- The body's JSON Schema is docs/schemas/webhook-body.schema.json (games/contracts/webhook_schema.py).

Modules: `base` (event types, headers, settings), `endpoints` (an app's endpoints and secrets),
`recording` (deliveries recorded with each move), `transport` (signing, the POST) and `sending`
(an attempt, retries and the sweep). Callers import what is re-exported here.
"""

from games.webhooks.base import (
    APP_EVENT_TYPES,
    BODY_TYPE,
    ERASED_TYPE,
    HIDDEN_EVENT_TYPES,
    ID_HEADER,
    PUBLIC_EVENT_TYPES,
    QUEUE,
    REMINDER_BODY_TYPE,
    SECRET_PREFIX,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
)
from games.webhooks.endpoints import (
    DELIVERY_PAGES,
    DELIVERY_STATUSES,
    DESCRIPTION_MAX,
    ENDPOINT_PAGES,
    EVENT_TYPE_MAX,
    EVENT_TYPES_MAX,
    URL_MAX,
    check_event_types,
    check_url,
    deliveries_of,
    delivery_body,
    delivery_of,
    endpoint_body,
    endpoint_create,
    endpoint_delete,
    endpoint_of,
    endpoint_update,
    endpoints_of,
    secret_of,
    secret_rotate,
)
from games.webhooks.recording import queue, record, record_app_event, record_reminder, redeliver
from games.webhooks.sending import attempt, deliver_due, due, sweep
from games.webhooks.transport import backoff, blocked, exchange, post, sign

__all__ = [
    "APP_EVENT_TYPES",
    "BODY_TYPE",
    "DELIVERY_PAGES",
    "DELIVERY_STATUSES",
    "DESCRIPTION_MAX",
    "ENDPOINT_PAGES",
    "ERASED_TYPE",
    "EVENT_TYPES_MAX",
    "EVENT_TYPE_MAX",
    "HIDDEN_EVENT_TYPES",
    "ID_HEADER",
    "PUBLIC_EVENT_TYPES",
    "QUEUE",
    "REMINDER_BODY_TYPE",
    "SECRET_PREFIX",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "URL_MAX",
    "attempt",
    "backoff",
    "blocked",
    "check_event_types",
    "check_url",
    "deliver_due",
    "deliveries_of",
    "delivery_body",
    "delivery_of",
    "due",
    "endpoint_body",
    "endpoint_create",
    "endpoint_delete",
    "endpoint_of",
    "endpoint_update",
    "endpoints_of",
    "exchange",
    "post",
    "queue",
    "record",
    "record_app_event",
    "record_reminder",
    "redeliver",
    "secret_of",
    "secret_rotate",
    "sign",
    "sweep",
]
