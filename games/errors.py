"""The one error vocabulary: every code a client can receive, the kinds of refusal and their HTTP statuses.

Every refusal of every adapter (REST, GraphQL, streams, the project's own views) carries one of
these codes; `ServiceError` refuses a code that is not here, as the engine's `EngineError` does for
its own closed set (which is part of this one). GraphQL's `Error.code` is an enum generated from
`Code`, and docs/errors.md is checked against it by a test. Renaming a code is a breaking change.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from games import messages
from games.engine.errors import CODES as ENGINE_CODES
from games.engine.errors import EngineError


class Kind(StrEnum):
    """What kind of refusal: each maps to one HTTP status."""

    MALFORMED = "malformed"  # the request itself is wrong: 400
    AUTH = "auth"  # no or bad credentials: 401
    FORBIDDEN = "forbidden"  # good credentials that may not do this (a key without a scope): 403
    NOT_FOUND = "not_found"  # nothing the caller may see: 404
    CONFLICT = "conflict"  # the table moved on (a version, a key reused): 409
    RULES = "rules"  # well-formed but not allowed now: 422
    QUOTA = "quota"  # over one of the app's quotas (games.quotas): 429
    UNAVAILABLE = "unavailable"  # the service cannot answer now (its database is down): 503


STATUS: dict[Kind, int] = {
    Kind.MALFORMED: 400,
    Kind.AUTH: 401,
    Kind.FORBIDDEN: 403,
    Kind.NOT_FOUND: 404,
    Kind.CONFLICT: 409,
    Kind.RULES: 422,
    Kind.QUOTA: 429,
    Kind.UNAVAILABLE: 503,
}


class Code(StrEnum):
    """Every error code of the API. Member names equal their values (GraphQL shows the names)."""

    # -- the rules engine (games/engine/errors.py) --
    wrong_phase = "wrong_phase"
    not_your_turn = "not_your_turn"
    card_not_in_hand = "card_not_in_hand"
    must_lead_lowest_club = "must_lead_lowest_club"
    must_follow_suit = "must_follow_suit"
    no_points_on_first_trick = "no_points_on_first_trick"
    hearts_not_broken = "hearts_not_broken"
    bad_pass = "bad_pass"
    moon_choice_invalid = "moon_choice_invalid"
    invalid_card = "invalid_card"
    invalid_option = "invalid_option"
    invalid_seat = "invalid_seat"
    invalid_action = "invalid_action"
    invalid_state = "invalid_state"
    game_over = "game_over"
    # -- tables and seats (the services) --
    not_found = "not_found"
    stale_version = "stale_version"
    idempotency_key_reused = "idempotency_key_reused"
    invalid_idempotency_key = "invalid_idempotency_key"
    invalid_version = "invalid_version"
    invalid_after = "invalid_after"
    invalid_filter = "invalid_filter"
    invalid_cursor = "invalid_cursor"
    invalid_clock = "invalid_clock"
    invalid_bot_level = "invalid_bot_level"
    already_seated = "already_seated"
    not_seated = "not_seated"
    seat_taken = "seat_taken"
    table_full = "table_full"
    already_waiting = "already_waiting"
    not_waiting = "not_waiting"
    invalid_wait = "invalid_wait"
    invite_invalid = "invite_invalid"
    invite_expired = "invite_expired"
    too_many_invites = "too_many_invites"
    table_not_open = "table_not_open"
    table_closed = "table_closed"
    not_started = "not_started"
    not_finished = "not_finished"
    review_not_allowed = "review_not_allowed"
    hints_not_allowed = "hints_not_allowed"
    not_archived = "not_archived"
    player_token_required = "player_token_required"
    app_key_required = "app_key_required"
    not_a_player_token = "not_a_player_token"
    # -- API keys and player tokens (docs/keys.md) --
    missing_scope = "missing_scope"
    key_expired = "key_expired"
    key_revoked = "key_revoked"
    token_expired = "token_expired"
    too_many_keys = "too_many_keys"
    key_not_live = "key_not_live"
    invalid_language = "invalid_language"
    # -- webhooks --
    invalid_url = "invalid_url"
    invalid_event_type = "invalid_event_type"
    too_many_webhooks = "too_many_webhooks"
    webhook_disabled = "webhook_disabled"
    # -- bots that apps bring --
    bot_name_taken = "bot_name_taken"
    too_many_bots = "too_many_bots"
    # -- push notifications: devices and the apps' provider credentials --
    invalid_device = "invalid_device"
    device_kind_not_allowed = "device_kind_not_allowed"
    too_many_devices = "too_many_devices"
    invalid_push_credential = "invalid_push_credential"
    # -- streams --
    invalid_format = "invalid_format"
    invalid_last_event_id = "invalid_last_event_id"
    ticket_invalid = "ticket_invalid"
    ticket_expired = "ticket_expired"
    # -- GraphQL over WebSocket --
    too_many_sockets = "too_many_sockets"
    too_many_subscriptions = "too_many_subscriptions"
    # -- requests (every adapter) --
    not_authenticated = "not_authenticated"
    authentication_failed = "authentication_failed"
    permission_denied = "permission_denied"
    rate_limited = "rate_limited"
    quota_exceeded = "quota_exceeded"
    malformed_request = "malformed_request"
    invalid_input = "invalid_input"
    request_too_large = "request_too_large"
    unsupported_media_type = "unsupported_media_type"
    not_acceptable = "not_acceptable"
    method_not_allowed = "method_not_allowed"
    invalid_request = "invalid_request"
    csrf_failed = "csrf_failed"
    metrics_forbidden = "metrics_forbidden"
    server_error = "server_error"
    service_unavailable = "service_unavailable"
    # -- GraphQL --
    invalid_query = "invalid_query"
    invalid_variables = "invalid_variables"
    query_too_deep = "query_too_deep"
    query_too_complex = "query_too_complex"
    too_many_aliases = "too_many_aliases"
    internal_error = "internal_error"


# The engine's codes that mean the request was malformed (400) rather than not allowed now (422).
MALFORMED_ENGINE_CODES = frozenset({"invalid_card", "invalid_option", "invalid_seat", "invalid_action"})

assert set(Code) >= ENGINE_CODES, sorted(ENGINE_CODES - set(Code))


def code(value: str) -> Code:
    """The Code of a string; an unknown code is a programming error, never sent to a client."""
    try:
        return Code(value)
    except ValueError:
        raise AssertionError(f"unknown error code {value!r}: add it to games.errors.Code") from None


class ServiceError(Exception):
    """A refused request. `kind` says what went wrong and maps to one HTTP status (STATUS); `code`
    is one of Code, stable and shared with the engine; `details` are structured fields of the
    error (`version` with stale_version, `option` with invalid_option...). `message` is the
    precise English text; `detail` is what a client reads, in the request's language
    (games/messages.py)."""

    def __init__(self, code_: str, message: str, *, kind: str, **details: Any) -> None:
        super().__init__(message)
        self.code: str = code(code_).value
        self.kind: str = Kind(kind).value
        self.message, self.details = message, details

    @property
    def status(self) -> int:
        return STATUS[Kind(self.kind)]

    @property
    def detail(self) -> str:
        """The message in the active language (the request's): `message` itself in English."""
        return messages.detail(self.code, self.message, self.details)

    def body(self) -> dict[str, Any]:
        """The error in the API's one shape: {"code", "detail", ...its structured fields}."""
        return {"code": self.code, "detail": self.detail, **self.details}

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, so a task's failure reports cleanly
        return (_service_error, (self.code, self.message, self.kind, self.details))

    @classmethod
    def from_engine(cls, exc: EngineError) -> ServiceError:
        kind = Kind.MALFORMED if exc.code in MALFORMED_ENGINE_CODES else Kind.RULES
        return cls(exc.code, exc.message, kind=kind, **exc.details)


def _service_error(code_: str, message: str, kind: str, details: dict[str, Any]) -> ServiceError:
    return ServiceError(code_, message, kind=kind, **details)
