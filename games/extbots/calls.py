"""Asking an app's bot for a seat's move: the signed request (the seat's own view and its legal
actions), the POSTs made together with a hard deadline each, and reading the answer.

The caller holds no transaction and no row lock while it waits (games.services.botturns): a bot
that is slow, or never answers, costs its table at most its `timeout_ms` per move and a worker of
the lane that long at most, never a lock anyone else waits for."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from games import webhooks
from games.engine import EngineError, State, action_from_dict, view
from games.extbots.endpoints import PREFIX, secret_of
from games.models import BotEndpoint, Table
from hearts_service import tracing

BODY_TYPE = "bot.turn"  # the body's `type` (docs/schemas/bot-turn.schema.json)
EVENT_HEADER = "Hearts-Event"
ANSWER_LIMIT = 16_384  # bytes of an answer read at most: an action is a few dozen
# The sends run on these threads so that each has a hard deadline; a send past its deadline ends
# by itself within the socket timeout (the same number of seconds), its answer ignored.
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="hearts-bot-call")


@dataclass(frozen=True)
class Answer:
    """What a seat's bot answered: `action` (its wire form, not yet checked against the rules) or
    the `reason` its move falls back to the basic bot, with the error text the app sees."""

    seat: int
    endpoint_id: int | None
    action: dict[str, Any] | None = None
    reason: str | None = None
    error: str = ""
    ms: int = 0


def request_body(
    table: Table, state: State, seat: int, endpoint: BotEndpoint, call_id: str
) -> dict[str, Any]:
    """The body of one call: the seat's own view (what a player in that seat reads, built by the
    engine for that seat only) and its legal actions, with the table, version and deadline."""
    seen = view(state, seat, history=False)
    return {
        "id": call_id,
        "type": BODY_TYPE,
        "bot": endpoint.pk,
        "name": endpoint.name,
        "table": table.pk,
        "version": table.version,
        "seat": seat,
        "hand": state.hand_no,
        "timeout_ms": endpoint.timeout_ms,
        "view": seen,
        "legal_actions": seen["legal_actions"],
    }


def _endpoints(table: Table, seats: list[int]) -> dict[int, BotEndpoint | None]:
    names = {seat: str(table.seating[seat]["bot"]).removeprefix(PREFIX) for seat in seats}
    rows = BotEndpoint.objects.filter(app=table.app_id, name__in=set(names.values())) if table.app_id else []
    found = {e.name: e for e in rows}
    return {seat: found.get(name) for seat, name in names.items()}


def _send(endpoint: BotEndpoint, body: str, call_id: str) -> tuple[int | None, bytes, str, float]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "hearts-bots/1",
        EVENT_HEADER: BODY_TYPE,
        # webhook-id (this call's id), webhook-timestamp (now), webhook-signature: Standard Webhooks
        **webhooks.sign(secret_of(endpoint), call_id, body),
    }
    started = time.monotonic()
    code, answer, error = webhooks.exchange(
        endpoint.url, body.encode(), headers, endpoint.timeout_ms / 1000, read=ANSWER_LIMIT
    )
    return code, answer, error, time.monotonic() - started


def _read(seat: int, endpoint: BotEndpoint, sent: tuple[int | None, bytes, str, float]) -> Answer:
    code, raw, error, took = sent
    ms = round(took * 1000)
    if took * 1000 > endpoint.timeout_ms or "timed out" in error:
        return Answer(
            seat, endpoint.pk, reason="timeout", error=f"no answer within {endpoint.timeout_ms} ms", ms=ms
        )
    if code is None or not 200 <= code < 300:
        return Answer(seat, endpoint.pk, reason="failed", error=error or f"HTTP {code}", ms=ms)
    try:
        answer = json.loads(raw)
        if not isinstance(answer, dict):
            raise ValueError("the answer is not a JSON object")
        action = action_from_dict(answer).to_dict()
    except (ValueError, EngineError) as exc:
        return Answer(seat, endpoint.pk, reason="bad_answer", error=f"not an action: {exc}"[:300], ms=ms)
    return Answer(seat, endpoint.pk, action=action, ms=ms)


def ask(table: Table, state: State, seats: list[int]) -> dict[int, Answer]:
    """The answers of the bots of `seats` (all to act now), asked together: each within its
    endpoint's timeout, measured from the send. A seat whose bot is gone or disabled is not asked."""
    endpoints = _endpoints(table, seats)
    answers: dict[int, Answer] = {}
    pending = {}
    for seat, endpoint in endpoints.items():
        if endpoint is None or not endpoint.enabled:
            why = "no such bot" if endpoint is None else "the bot is disabled"
            answers[seat] = Answer(seat, endpoint.pk if endpoint else None, reason="disabled", error=why)
            continue
        call_id = f"call_{uuid.uuid4().hex}"
        body = json.dumps(request_body(table, state, seat, endpoint, call_id), separators=(",", ":"))
        sent = _pool.submit(tracing.carry(_send), endpoint, body, call_id)  # the task's trace goes along
        pending[seat] = (endpoint, time.monotonic(), sent)
    for seat, (endpoint, started, future) in pending.items():
        left = endpoint.timeout_ms / 1000 - (time.monotonic() - started)
        try:
            answers[seat] = _read(seat, endpoint, future.result(timeout=max(left, 0.001)))
        except FutureTimeout:
            ms = round((time.monotonic() - started) * 1000)
            error = f"no answer within {endpoint.timeout_ms} ms"
            answers[seat] = Answer(seat, endpoint.pk, reason="timeout", error=error, ms=ms)
    return answers
