"""The operations of the bots an app brings (docs/bots-byo.md): register, change, delete, rotate a secret.

Each is declared once: REST serves it (games/api/bots.py) and GraphQL too (games/graphql/bots.py).
App key only; another app's bot is not_found. No Idempotency-Key: the answer to a registration
holds the secret, which is shown once and must not be stored.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer

from games import extbots
from games.accounts import Scope
from games.audit import Audited, rotated
from games.errors import Code
from games.models import BotEndpoint
from games.operations.base import Access, Call, Operation
from games.operations.fields import (
    EmptyIn,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)

_LOW, _HIGH = extbots.TIMEOUT_LIMITS
FIELDS = ("name", "url", "timeout_ms", "enabled")  # what the audit trail records (games/audit.py)
DENIED = "bots are registered with an app key"
ONE = (Code.not_found,)  # an operation on one of the app's bots
INPUT = (Code.invalid_url, Code.bot_name_taken)  # the checks of a name and a URL
NAME_HELP = (
    f"Seats name the bot as the level ext:<name>: 1 to {extbots.NAME_MAX} letters, digits, _ or -, "
    "unique in the app"
)
URL_HELP = "Where the seat's turns are POSTed: an absolute http(s) URL"
TIMEOUT_HELP = f"How long one move may take, {_LOW} to {_HIGH} ms; later, the basic bot moves instead"


@extend_schema_serializer(component_name="RegisterBot")
class BotIn(StrictSerializer):
    """A new bot endpoint."""

    name = StrictCharField(max_length=extbots.NAME_MAX, help_text=NAME_HELP)
    url = StrictCharField(help_text=URL_HELP)
    timeout_ms = StrictIntegerField(
        required=False,
        default=extbots.TIMEOUT_DEFAULT,
        help_text=f"{TIMEOUT_HELP} (default {extbots.TIMEOUT_DEFAULT})",
    )


@extend_schema_serializer(component_name="UpdateBot")
class BotPatchIn(StrictSerializer):
    """The fields of a bot endpoint to change; the others stay."""

    name = StrictCharField(required=False, max_length=extbots.NAME_MAX, help_text=NAME_HELP)
    url = StrictCharField(required=False, help_text=URL_HELP)
    timeout_ms = StrictIntegerField(required=False, help_text=TIMEOUT_HELP)
    enabled = StrictBooleanField(required=False, help_text="false: not called, its seats' moves fall back")


def _endpoint(c: Call) -> Any:
    """The app's bot the call names (another app's: not_found)."""
    return extbots.endpoint_of(c.principal.app, c["bot_id"])


def _register(c: Call) -> dict[str, Any]:
    endpoint, secret = extbots.endpoint_create(
        app=c.app, name=c["name"], url=c["url"], timeout_ms=c["timeout_ms"]
    )
    return {**extbots.body(endpoint), "secret": secret}


def _update(c: Call) -> dict[str, Any]:
    changes = {k: v for k, v in c.input.items() if k in BotPatchIn._declared_fields}
    return extbots.body(extbots.endpoint_update(_endpoint(c), changes))


def _rotate(c: Call) -> dict[str, Any]:
    endpoint = _endpoint(c)
    secret = extbots.secret_rotate(endpoint)
    return {**extbots.body(endpoint), "secret": secret}


REGISTER_BOT = Operation(
    name="registerBot",
    quota="bots",
    audited=Audited("bot", BotEndpoint, FIELDS),
    scope=Scope.bots_write,
    description="App key: a new bot endpoint; seats name it as the level ext:<name>. The answer holds "
    "its signing secret, shown this once. Errors: invalid_input (name, timeout_ms), invalid_url (with "
    "private addresses refused), bot_name_taken.",
    input=BotIn,
    access=Access.APP,
    denied=DENIED,
    run=_register,
    errors=INPUT,
)

UPDATE_BOT = Operation(
    name="updateBot",
    audited=Audited("bot", BotEndpoint, FIELDS, id_in="bot_id"),
    scope=Scope.bots_write,
    description="App key: change a bot's name, URL, timeout or enabled (the fields left out stay).",
    input=BotPatchIn,
    path=("bot_id",),
    access=Access.APP,
    denied=DENIED,
    run=_update,
    errors=(*ONE, *INPUT),
)

ROTATE_BOT_SECRET = Operation(
    name="rotateBotSecret",
    audited=Audited("bot", BotEndpoint, FIELDS, id_in="bot_id", changed=rotated),
    scope=Scope.bots_write,
    description="App key: a new signing secret for a bot, shown this once; the old one stops at once.",
    input=EmptyIn,
    path=("bot_id",),
    access=Access.APP,
    denied=DENIED,
    run=_rotate,
    errors=ONE,
)

DELETE_BOT = Operation(
    name="deleteBot",
    audited=Audited("bot", BotEndpoint, FIELDS, id_in="bot_id"),
    scope=Scope.bots_write,
    description="App key: forget a bot; its seats' moves fall back to the basic bot (reason disabled).",
    input=EmptyIn,
    path=("bot_id",),
    access=Access.APP,
    denied=DENIED,
    run=lambda c: extbots.endpoint_delete(_endpoint(c)),
    errors=ONE,
)
