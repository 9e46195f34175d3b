"""What the sync and async sockets share, free of I/O: the GraphQL documents, the answers turned back
into the REST and stream shapes, the errors by code, and which closes end a socket for good.

The socket speaks `graphql-transport-ws` (the protocol of the `graphql-ws` JavaScript library) to
`ws(s)://<host>/graphql/`: `connection_init` with `{"Authorization": "Bearer <token>"}` (or a stream
ticket), `connection_ack`, then `subscribe` / `next` / `error` / `complete` per operation and
`ping` / `pong` both ways (docs/graphql.md).

Shapes. Every subscription message is selected whole (every field of every message type) and
turned back into the stream's own dict: snake_case keys, `type` as the SSE event's (`state`,
`tables`, `your_turn` for the subscriptions' own messages), `id` the stream's event id; a table
(`state`, `tables`, a mutation's answer) is the REST table body. So code written for
`stream_table_events` works unchanged on `subscribe_table_events`. What GraphQL answers as null
is kept as None, except in `legal_actions`, where REST leaves out what does not apply (and the
table options `first_hand` and `hands`, left out at their defaults as REST does).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, cast

from hearts_client.errors import (
    _BY_STATUS,  # the error class of each HTTP status, as REST raises them
    HeartsError,
    QuotaExceeded,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    StaleVersion,
    TransportError,
)
from hearts_client.models import Action, Event, Table

PROTOCOL = "graphql-transport-ws"

# -- documents ----------------------------------------------------------------------------------

LEGAL = "legalActions { type count from cards choices }"
GAME = (
    "seat handNumber phase dealer passDirection dealCommitment toAct turn handSizes heartsBroken "
    "trick { seat card } leader tricks { leader cards { seat card } winner points } pointsTaken "
    "scores scoresheet { hand points totals moon { seat choice } } winners passed "
    "widow { size takenBy } moon { seat choices } gameSeed hand myPass { to cards } "
    f"received {{ from cards }} {LEGAL}"
)
TABLE = (
    "id status version options { players targetScore variant omnibusCard tieRule firstHand hands } "
    "clocks { pass play moon awayAfter } botThinkMs botPaceMs deadline "
    "seats { position player name bot away timeouts } yourSeat "
    f"game {{ {GAME} }} rematchOf rematch {{ asked table }} visibility invited "
    "spectatorDelay { seconds tricks } delayed spectators rated hints"
)
_RECORD = (
    "hand seed dealCommitment dealer passDirection dealt widow passes { to cards } "
    "tricks { leader cards winner } takenPoints moon { seat choice } points totals"
)
# The fields of each logged event type beyond `id table seq hand type` (games/graphql/events.py).
# A field whose type differs between event types (`points`, `totals`, `winners`, `status`) is
# aliased `<Type>_<field>` so the fragments merge; `snake` takes the alias off.
EVENT_FIELDS: dict[str, str] = {
    "game_started": "",
    "seat_taken": "seat player name",
    "seat_left": "seat player",
    "bot_added": "seat level",
    "bot_fallback": "seat reason",
    "hand_started": "dealer passDirection dealCommitment",
    "cards_dealt": "seat cards",
    "pass_submitted": "seat",
    "cards_passed": "seat to cards",
    "passes_complete": "",
    "cards_received": "seat from cards",
    "card_played": "seat card",
    "hearts_broken": "seat card",
    "trick_won": "seat trick cards !points",
    "trick_carried": "leader cards",
    "moon_shot": "seat choices",
    "moon_chosen": "seat choice",
    "hand_scored": "!points !totals moon { seat choice }",
    "hand_revealed": f"record {{ {_RECORD} }}",
    "game_over": "!winners !totals seed",
    "table_abandoned": "",
    "table_finished": "!status !winners !totals",
    "ratings_changed": "family changes { seat place mu sigma }",
    "turn_timed_out": "seat deadline",
    "seat_away": "seat",
    "seat_back": "seat",
    "match_found": "bots",
    "quick_play_expired": "",
    "rematch_proposed": "seat",
    "rematch_accepted": "seat",
    "rematch_started": "newTable",
    "tournament_table": "tournament dealSet rotation",
    "tournament_progress": "tournament tablesFinished tablesTotal !status",
    "tournament_next_table": "tournament nextTable",
}
OWN_TYPES = {"TableStateEvent": "state", "MyTablesEvent": "tables", "YourTurnEvent": "your_turn"}


def type_name(kind: str) -> str:
    """`card_played` -> `CardPlayedEvent` (the GraphQL object type of an event type)."""
    return "".join(part.capitalize() for part in kind.split("_")) + "Event"


def _fields(kind: str, fields: str) -> str:
    name = type_name(kind)
    out = []
    for field in fields.split(" ") if fields else []:
        out.append(f"{name}_{field[1:]}: {field[1:]}" if field.startswith("!") else field)
    return " ".join(out)


def _selection() -> str:
    parts = ["id", "__typename"]
    for kind, fields in EVENT_FIELDS.items():
        parts.append(f"... on {type_name(kind)} {{ table seq hand type {_fields(kind, fields)} }}")
    parts.append(f"... on TableStateEvent {{ table state {{ {TABLE} }} }}")
    parts.append(f"... on MyTablesEvent {{ tables {{ {TABLE} }} }}")
    parts.append(f"... on YourTurnEvent {{ table version hand phase seat {LEGAL} deadline }}")
    return " ".join(parts)


EVENT = _selection()
TABLE_EVENTS = f"subscription TableEvents($tableId: Int!, $after: String) {{ tableEvents(tableId: $tableId, after: $after) {{ {EVENT} }} }}"  # noqa: E501
MY_EVENTS = f"subscription MyEvents($after: String) {{ myEvents(after: $after) {{ {EVENT} }} }}"
GET_TABLE = f"query GetTable($id: Int!) {{ table(id: $id) {{ {TABLE} }} }}"
_PAYLOAD = f"{{ table {{ {TABLE} }} errors {{ code message field }} replayed }}"
_TABLE_ARGS = "$tableId: Int!, $expectedVersion: Int, $idempotencyKey: String"
_PASS_ON = "tableId: $tableId, expectedVersion: $expectedVersion, idempotencyKey: $idempotencyKey"
SUBMIT_ACTION = (
    f"mutation SubmitAction({_TABLE_ARGS}, $type: String!, $card: String, $cards: [String!], "
    f"$choice: String) {{ submitAction({_PASS_ON}, type: $type, card: $card, cards: $cards, "
    f"choice: $choice) {_PAYLOAD} }}"
)
JOIN_TABLE = (
    f"mutation JoinTable({_TABLE_ARGS}, $position: Int, $invite: String) "
    f"{{ joinTable({_PASS_ON}, position: $position, invite: $invite) {_PAYLOAD} }}"
)
LEAVE_TABLE = f"mutation LeaveTable({_TABLE_ARGS}) {{ leaveTable({_PASS_ON}) {_PAYLOAD} }}"
RECLAIM_SEAT = f"mutation ReclaimSeat({_TABLE_ARGS}) {{ reclaimSeat({_PASS_ON}) {_PAYLOAD} }}"


def action_variables(action: Action) -> dict[str, Any]:
    """An action's fields as the variables of SUBMIT_ACTION."""
    return {k: v for k, v in action.items() if k in ("type", "card", "cards", "choice")}


# -- shapes ---------------------------------------------------------------------------------------

_QUIET = {"first_hand": 1, "hands": 0}  # table options REST shows only when set
_ALIAS = re.compile(r"^[A-Z]\w*Event_")
_UPPER = re.compile(r"(?<!^)(?=[A-Z])")


def snake(value: Any) -> Any:
    """A GraphQL answer in the REST shape: snake_case keys, no `__typename`, no type aliases, and
    `legal_actions` without its nulls (REST leaves out what does not apply)."""
    if isinstance(value, list):
        return [snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "__typename":
            continue
        name = _UPPER.sub("_", _ALIAS.sub("", key)).lower()
        item = snake(item)
        if name == "legal_actions" and isinstance(item, dict):
            item = {k: v for k, v in item.items() if v is not None}
        elif name == "options" and isinstance(item, dict):  # REST leaves these out at their defaults
            item = {k: v for k, v in item.items() if k not in _QUIET or _QUIET[k] != v}
        out[name] = item
    return out


def event_of(message: dict[str, Any]) -> Event:
    """One subscription message as the stream's event (`type` `state`, `tables` and `your_turn` for
    the subscriptions' own messages; a `your_turn`'s `seq` is its version, as on the stream)."""
    kind = OWN_TYPES.get(str(message.get("__typename")))
    event = snake(message)
    if kind is not None:
        event["type"] = kind
    if kind == "your_turn":
        event["seq"] = event["version"]
    return cast(Event, event)


def table_of(payload: dict[str, Any] | None) -> Table:
    return cast(Table, snake(payload))


# -- errors ---------------------------------------------------------------------------------------

_STATUS_CODES = {
    422: "wrong_phase not_your_turn card_not_in_hand must_lead_lowest_club must_follow_suit "
    "no_points_on_first_trick hearts_not_broken bad_pass moon_choice_invalid invalid_state game_over "
    "not_seated invite_invalid invite_expired table_not_open table_closed not_started not_finished "
    "player_token_required app_key_required not_a_player_token too_many_sockets too_many_subscriptions "
    "device_kind_not_allowed review_not_allowed hints_not_allowed",
    400: "invalid_card invalid_option invalid_seat invalid_action invalid_idempotency_key "
    "invalid_version invalid_after invalid_filter invalid_cursor invalid_clock invalid_bot_level "
    "invalid_wait invalid_language invalid_url invalid_event_type invalid_format "
    "invalid_last_event_id malformed_request invalid_input invalid_request invalid_query "
    "invalid_variables query_too_deep query_too_complex too_many_aliases invalid_device "
    "invalid_push_credential",
    409: "stale_version idempotency_key_reused already_seated seat_taken table_full already_waiting "
    "too_many_webhooks webhook_disabled bot_name_taken too_many_devices not_archived too_many_invites "
    "too_many_bots too_many_keys key_not_live",
    404: "not_found not_waiting",
    401: "ticket_invalid ticket_expired not_authenticated authentication_failed key_expired key_revoked "
    "token_expired",
    403: "permission_denied csrf_failed metrics_forbidden missing_scope",
    429: "rate_limited quota_exceeded",
    413: "request_too_large",
    415: "unsupported_media_type",
    406: "not_acceptable",
    405: "method_not_allowed",
    500: "server_error internal_error",  # GraphQL answers internal_error with 200: a bug all the same
    503: "service_unavailable",
}
# Each code's HTTP status (docs/errors.md; a test holds the two equal): the class it is raised as.
CODE_STATUS: dict[str, int] = {
    code: status for status, codes in _STATUS_CODES.items() for code in codes.split()
}


def coded_error(code: str, detail: str, body: dict[str, Any] | None = None) -> HeartsError:
    """The exception of a code, as REST raises it: its class by the code's status (`stale_version`:
    StaleVersion, `quota_exceeded`: QuotaExceeded; `rate_limited` and `service_unavailable` with
    `retry_after` when given)."""
    status = CODE_STATUS.get(code)
    if code == "stale_version":
        cls: type[HeartsError] = StaleVersion
    elif code == "quota_exceeded":
        cls = QuotaExceeded
    elif status is None:
        cls = HeartsError
    else:
        cls = _BY_STATUS.get(status, ServerError if status >= 500 else HeartsError)
    error = cls(code, detail, status, {"code": code, "detail": detail, **(body or {})})
    if isinstance(error, RateLimited | ServiceUnavailable):
        wait = (body or {}).get("retry_after")
        error.retry_after = float(wait) if isinstance(wait, int | float) else None
    return error


def graphql_error(errors: Any) -> HeartsError:
    """The first of a GraphQL answer's `errors` (or a payload's typed `errors`) as an exception,
    by its `extensions.code` (or `code`)."""
    first = errors[0] if isinstance(errors, list) and errors else errors
    if not isinstance(first, dict):
        return coded_error("invalid_request", str(first))
    raw = first.get("extensions")
    extensions: dict[str, Any] = raw if isinstance(raw, dict) else {}
    code = extensions.get("code") or first.get("code") or "invalid_query"
    detail = str(first.get("message", ""))
    extra = {k: v for k, v in extensions.items() if k != "code"}
    if first.get("field"):
        extra["field"] = first["field"]
    return coded_error(str(code), detail, extra)


def payload_of(answer: dict[str, Any], field: str) -> dict[str, Any]:
    """A mutation's payload (`table`, `errors`, ...) from its answer; raises its first error."""
    if answer.get("errors"):
        raise graphql_error(answer["errors"])
    payload = (answer.get("data") or {}).get(field)
    if not isinstance(payload, dict):
        raise coded_error("internal_error", f"no {field} in the answer")
    if payload.get("errors"):
        raise graphql_error(payload["errors"])
    return payload


@dataclass(frozen=True)
class Closing:
    """How a socket closed: resume (`retry`), or end for good with `error`."""

    retry: bool
    error: HeartsError


# Closes that no new connection would change: a refused credential (4403), or this client
# breaking the protocol (4400, 4401, 4406, 4409). A 4429 is a rate limit or a cap on open sockets
# (a socket of ours the server has not seen close yet counts): it is waited out; its other use
# (a second connection_init) is a bug.
_FATAL = {4400, 4401, 4403, 4406, 4409}


def closing(code: int | None, reason: str) -> Closing:
    """What a close code and its reason (`<error code>: <detail>`) mean for the socket."""
    error_code, _, detail = reason.partition(": ")
    if not detail or not re.fullmatch(r"[a-z_]+", error_code):
        error_code, detail = "transport_error", f"the socket closed ({code}) {reason}".strip()
    if error_code == "transport_error":
        error: HeartsError = TransportError(error_code, detail)
    else:
        error = coded_error(error_code, detail)
    if code in _FATAL or (code == 4429 and error_code not in ("rate_limited", "too_many_sockets")):
        return Closing(False, error)
    return Closing(True, error)


_ids = itertools.count(1)


def next_id() -> str:
    return str(next(_ids))


def socket_url(api_base: str) -> str:
    """`http://host:8000/api/v1` -> `ws://host:8000/graphql/` (https -> wss)."""
    root = api_base.rstrip("/").removesuffix("/api/v1")
    if root.startswith("https://"):
        return "wss://" + root.removeprefix("https://") + "/graphql/"
    return "ws://" + root.removeprefix("http://") + "/graphql/"


def init_payload(token: str | None, ticket: str | None) -> dict[str, Any]:
    if ticket is not None:
        return {"ticket": ticket}
    return {"Authorization": f"Bearer {token}"} if token else {}


def is_resendable(query: str, variables: dict[str, Any] | None) -> bool:
    """May this operation be sent again after a lost socket? A query always; a mutation only with
    an `idempotencyKey` (a repeat then answers the first outcome instead of acting twice)."""
    body = re.sub(r"#[^\n]*", "", query).lstrip()
    if not body.startswith("mutation"):
        return True
    return bool((variables or {}).get("idempotencyKey"))


__all__ = [
    "EVENT",
    "GET_TABLE",
    "MY_EVENTS",
    "PROTOCOL",
    "SUBMIT_ACTION",
    "TABLE",
    "TABLE_EVENTS",
    "Closing",
    "closing",
    "coded_error",
    "event_of",
    "graphql_error",
    "snake",
    "table_of",
]
