"""Every error's `detail` in the caller's language: one message per error code, marked for translation.

An error keeps its stable `code` and its structured fields in every language; only `detail`, the
text for people, changes. English answers keep the precise message each refusal was raised with
(`ServiceError.message`, and the adapters' own texts); in any other language the detail is the
translation of the code's message below, which interpolates only the error's structured fields
(`version`, `clock`, `seat`, `limit`, `retry_after`...) that are in the same answer, so a
translation can never show anything the English answer does not. A code has one or more
messages, the most precise first; the first whose fields are all present is used, and the last
needs none. The translations live in locale/<language>/LC_MESSAGES/django.po (compiled to
django.mo), the language of a request is chosen by Django's LocaleMiddleware from
`Accept-Language`, and a player's own preference (`Player.language`) wins for that player's
requests (`prefer`). docs/errors.md, "Languages", says how to add a language.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

_ = gettext_noop  # marks a message for makemessages; it is translated when an answer is rendered

# One entry per code of games.errors.Code (tests/api/test_languages.py holds them equal).
MESSAGES: dict[str, tuple[str, ...]] = {
    # -- the rules engine --
    "wrong_phase": (_("that action does not fit this phase of the hand"),),
    "not_your_turn": (_("it is seat %(turn)s's turn"), _("it is not your turn")),
    "card_not_in_hand": (_("%(card)s is not in your hand"), _("that card is not in your hand")),
    "must_lead_lowest_club": (
        _("the first trick must be led with the %(required)s"),
        _("the first trick must be led with the lowest club"),
    ),
    "must_follow_suit": (_("you must follow suit (%(suit)s)"), _("you must follow suit")),
    "no_points_on_first_trick": (_("no hearts or QS on the first trick while you hold another card"),),
    "hearts_not_broken": (
        _("hearts are not broken yet: lead another suit (with only hearts and the QS, lead the QS)"),
    ),
    "bad_pass": (_("this pass is refused: pass three different cards from your hand, once per hand"),),
    "moon_choice_invalid": (_("a moon choice is subtract or add"),),
    "invalid_card": (_("not a card: write rank then suit, like 2C, TD, QS or AH"),),
    "invalid_option": (
        _("the table option %(option)s is unknown or out of range"),
        _("the table options are not valid"),
    ),
    "invalid_seat": (_("no seat %(seat)s at this table"), _("no such seat at this table")),
    "invalid_action": (_("not an action: send play, pass or moon"),),
    "invalid_state": (_("the game state is not valid"),),
    "game_over": (_("the game is over"),),
    # -- tables, seats and credentials --
    "not_found": (_("not found, or not yours to see"),),
    "stale_version": (
        _("the table is at version %(version)s: read it again, then act"),
        _("the table has changed: read it again, then act"),
    ),
    "idempotency_key_reused": (_("this idempotency key was used for a different request"),),
    "invalid_idempotency_key": (_("an idempotency key is 1 to 128 printable ASCII characters"),),
    "invalid_version": (_("a version is a whole number"),),
    "invalid_after": (
        _("after must be a sequence number from 0 to the table's version %(version)s"),
        _("after must be a sequence number (0 or more)"),
    ),
    "invalid_filter": (_("a list filter has a value that is not allowed"),),
    "invalid_cursor": (_("use a cursor that this list returned"),),
    "invalid_clock": (_("the clock %(clock)s is unknown or out of range"), _("the clocks are not valid")),
    "invalid_bot_level": (_("a bot level is random, basic, strong or expert"),),
    "already_seated": (_("you already have a seat at this table"),),
    "not_seated": (_("you have no seat at this table"),),
    "seat_taken": (_("that seat is taken"),),
    "table_full": (_("every seat is taken"),),
    "table_not_open": (_("the table has started: seats no longer change"),),
    "table_closed": (_("the table was abandoned or is finished"),),
    "not_started": (_("the game has not started yet"),),
    "not_finished": (_("the game is not over yet"),),
    "review_not_allowed": (
        _(
            "a hand is reviewed once it is over, by its own seat while the game goes on, "
            "by every reader after it"
        ),
    ),
    "hints_not_allowed": (_("hints are off at this table: never allowed at a rated or tournament table"),),
    "not_archived": (_("this table is not archived"),),
    "player_token_required": (_("only a player can do this: use a player's token"),),
    "app_key_required": (_("only the app can do this: use its API key"),),
    "not_a_player_token": (_("only a player token can be revoked"),),
    "already_waiting": (
        _("you already wait in quick play at table %(table)s: leave that queue first"),
        _("you already wait in quick play: leave that queue first"),
    ),
    "not_waiting": (_("you are not waiting in quick play"),),
    "invalid_wait": (_("wait_seconds is a whole number from 0 to 300"),),
    "invite_invalid": (_("this invite code is unknown, revoked or used up"),),
    "invite_expired": (_("this invite code has expired"),),
    "too_many_invites": (
        _("the table has %(limit)s usable invite codes, as many as it may have: revoke one first"),
        _("the table has as many usable invite codes as it may have: revoke one first"),
    ),
    "invalid_language": (
        _("unknown language: use one of %(known)s, or an empty string"),
        _("unknown language"),
    ),
    # -- webhooks --
    "invalid_url": (_("this URL cannot receive webhooks"),),
    "invalid_event_type": (_("not a public event type"),),
    "too_many_webhooks": (_("the app has as many webhooks as it may have"),),
    "webhook_disabled": (_("the webhook is disabled: enable it first"),),
    # -- bots that apps bring --
    "bot_name_taken": (_("the app already has a bot of this name"),),
    "too_many_bots": (
        _("the app has %(limit)s bots, as many as it may have: delete one first"),
        _("the app has as many bots as it may have: delete one first"),
    ),
    # -- push notifications --
    "invalid_device": (
        _("the device's %(field)s is not valid"),
        _("this device cannot be registered: check its token and keys"),
    ),
    "device_kind_not_allowed": (_("a guest can register only Web Push devices"),),
    "too_many_devices": (
        _("you have %(limit)s devices, as many as a player may have: remove one first"),
        _("you have as many devices as a player may have: remove one first"),
    ),
    "invalid_push_credential": (
        _("the push credential's %(field)s is not valid"),
        _("this push credential is not valid"),
    ),
    # -- streams --
    "invalid_format": (_("format is sse or ndjson"),),
    "invalid_last_event_id": (_("not an event id of this stream"),),
    "ticket_invalid": (_("this stream ticket cannot open this stream"),),
    "ticket_expired": (_("this stream ticket has expired: ask for a new one"),),
    # -- API keys and player tokens --
    "missing_scope": (_("this API key lacks the scope %(scope)s"), _("this API key lacks a scope it needs")),
    "key_expired": (_("this API key has expired: use its replacement"),),
    "key_revoked": (_("this API key was revoked"),),
    "token_expired": (_("this token has expired: ask for a new one"),),
    "key_not_live": (_("only a live key rotates: this one is %(reason)s"), _("only a live key rotates")),
    "too_many_keys": (_("too many live API keys: at most %(limit)s"), _("too many live API keys")),
    # -- GraphQL over WebSocket --
    "too_many_sockets": (_("too many open sockets: at most %(limit)s"), _("too many open sockets")),
    "too_many_subscriptions": (
        _("too many open subscriptions: at most %(limit)s"),
        _("too many open subscriptions"),
    ),
    # -- requests --
    "not_authenticated": (_("send Authorization: Bearer with a key or token"),),
    "authentication_failed": (_("unknown or revoked key or token"),),
    "permission_denied": (_("these credentials may not do this"),),
    "rate_limited": (
        _("too many requests: retry after %(retry_after)s s"),
        _("too many requests: retry later"),
    ),
    "quota_exceeded": (
        _("quota %(quota)s reached: at most %(limit)s"),
        _("one of this app's quotas is full"),
    ),
    "malformed_request": (_("the request is malformed"),),
    "invalid_input": (_("the field %(field)s is not valid"), _("the request body is not valid")),
    "request_too_large": (
        _("request bodies are at most %(limit)s bytes"),
        _("the request body is too large"),
    ),
    "unsupported_media_type": (_("send the body as application/json"),),
    "not_acceptable": (_("no answer satisfies this Accept header"),),
    "method_not_allowed": (_("this method is not allowed here"),),
    "invalid_request": (_("this request cannot be taken as a whole"),),
    "csrf_failed": (_("CSRF verification failed"),),
    "metrics_forbidden": (_("metrics need the metrics token or a private address"),),
    "server_error": (_("internal error"),),
    "service_unavailable": (_("the database is not answering: retry shortly (nothing was changed)"),),
    # -- GraphQL --
    "invalid_query": (_("the query does not parse or does not fit the schema"),),
    "invalid_variables": (_("a variable is missing or of the wrong type"),),
    "query_too_deep": (_("the query is nested deeper than %(limit)s"), _("the query is nested too deeply")),
    "query_too_complex": (_("the query costs more than %(limit)s"), _("the query is too complex")),
    "too_many_aliases": (_("the query has more than %(limit)s aliases"), _("the query has too many aliases")),
    "internal_error": (_("internal error"),),
}

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def placeholders(template: str) -> set[str]:
    """The fields a message interpolates (`%(version)s` -> version)."""
    return set(PLACEHOLDER.findall(template))


def _shown(value: Any) -> str | None:
    """A field as a message shows it: lists joined with commas; None and "" count as absent."""
    if value is None or value == "":
        return None
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


def english() -> bool:
    """True when answers are in English (the default, and every request that asks for no language)."""
    return (translation.get_language() or "en").split("-")[0] == "en"


def detail(code: str, message: str, fields: Mapping[str, Any] | None = None) -> str:
    """The `detail` of an error in the active language: `message` itself in English, otherwise the
    translation of the code's most precise message whose fields are all in `fields`."""
    if english():
        return message
    fields = fields or {}
    for template in MESSAGES[code]:
        values = {name: _shown(fields.get(name)) for name in placeholders(template)}
        if None not in values.values():
            return gettext(template) % values
    raise AssertionError(f"{code}: its last message must need no field")  # tests rule it out


def body(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """An error in the API's one shape, `{"code", "detail", ...fields}`, for the answers built
    outside a ServiceError (the project's own views, the HTTP limits)."""
    return {"code": code, "detail": detail(code, message, fields), **fields}


def languages() -> list[str]:
    """The codes of the languages answers can be in (settings.LANGUAGES): `en` first."""
    return [code for code, _name in settings.LANGUAGES]


def prefer(language: str) -> None:
    """Answer the rest of this request in a player's chosen language (blank: keep the one
    LocaleMiddleware chose from Accept-Language). The REST, GraphQL and stream adapters call it
    once they know the caller; LocaleMiddleware then names it in Content-Language."""
    if language:
        translation.activate(language)


def changed(request: HttpRequest, language: str) -> None:
    """After a player set their language: the rest of this request in it, or, set blank, in the
    request's Accept-Language again."""
    translation.activate(language or translation.get_language_from_request(request))
