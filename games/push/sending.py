"""Sending: one claimed attempt at a notification (run by the task or the embedded sender), the checks
that spare a player a push they no longer need, and the safety net for lost tasks and dead workers.

At most once: an attempt claims the message (a lease) in one transaction and makes the provider
request after the commit. A worker killed after its claim leaves the message `in_doubt` when the
lease runs out (the provider may have it: it is not sent again; the collapse id would fold a repeat
into the same notification on the device anyway). A duplicate task finds the claim and stops.
Retries (the provider's 5xx or 429, a network error) wait with backoff, or the provider's
Retry-After; a token the provider calls dead removes its device."""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from games.engine import State, state_from_dict
from games.infra import jobs, metrics, presence
from games.models import PushDevice, PushMessage, Table
from games.prepared import Prepared, PreparedUpdate
from games.push import credentials, devices, recording, texts
from games.push.providers import Outcome, Target, apns, fcm, webpush
from hearts_service import tracing

log = logging.getLogger(__name__)
Status = PushMessage.Status
SKEW = dt.timedelta(seconds=1)  # a task on a machine whose clock is behind still finds its message due


def _conf(name: str) -> Any:
    return getattr(settings, name)


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base * 2^(attempts-1), capped,
    with up to 25% jitter downwards."""
    base, cap = float(_conf("PUSH_BACKOFF_BASE")), float(_conf("PUSH_BACKOFF_MAX"))
    return float(min(cap, base * 2 ** max(0, attempts - 1)) * random.uniform(0.75, 1.0))


# Imported here, before a worker forks its pool: a first send that imported them took two seconds.
PROVIDERS: dict[str, Any] = {"fcm": fcm, "apns": apns, "webpush": webpush}
UNSURE_WAIT = 0.5  # seconds a push waits when Redis cannot say whether its player is watching


def _provider(kind: str) -> Any:
    return PROVIDERS[kind]


def _still_wanted(row: PushMessage, now: dt.datetime) -> str:
    """'' when the message should still go, else why not: the seat acted, the game moved on, the
    player is watching the table, the device expired."""
    device: PushDevice = row.device
    if device.expires_at is not None and device.expires_at <= now:
        return "device_expired"
    table: Table | None = row.table
    if table is None:
        return ""
    if row.kind in ("turn", "reminder"):
        if table.state is None or table.status in (Table.Status.FINISHED, Table.Status.ABANDONED):
            return "over"
        state: State = state_from_dict(table.state)
        seat = row.seat if row.seat is not None else -1
        if seat not in state.to_act():
            return "acted"
        if row.kind == "turn" and recording.turn_key(table.pk, state, seat) != row.key:
            return "acted"
        stamp = f":{int(table.deadline.timestamp())}:" if table.deadline is not None else None
        if row.kind == "reminder" and (stamp is None or stamp not in row.key):
            return "acted"
    elif row.kind == "invite" and table.status != Table.Status.OPEN:
        return "started"
    seen = presence.watching(table.pk, device.player_id)  # every kind: a watching player saw it
    if seen is None:
        return "unsure"
    if seen:
        return "watching"
    return ""


# The attempt's statements, compiled once per process (games.prepared): the lane runs one attempt
# per turn of every person with a device, and compiling this three-join locked read and the updates
# was over half of its CPU under load (bench/README.md, issue 35).
_CLAIM = Prepared(
    lambda message: (
        PushMessage.objects.select_for_update(of=("self",))
        .select_related("device", "device__player", "table")
        .filter(uuid=message)[:1]
    ),
    [uuid.UUID],
)
_SET_DUE = PreparedUpdate(PushMessage, ["next_attempt_at", "queued_at"], ["pk"])
_SET_CLOSED = PreparedUpdate(PushMessage, ["status", "next_attempt_at", "last_error"], ["pk"])
_SET_CLAIM = PreparedUpdate(PushMessage, ["attempts", "next_attempt_at", "claim"], ["pk"])
# An attempt's result applies only while its claim holds (no other run took the message since).
_RESULT_FIELDS = ["claim", "last_status_code", "last_error", "status", "sent_at", "next_attempt_at"]
_RESULT_FIELDS += ["queued_at"]
_SET_RESULT = PreparedUpdate(PushMessage, _RESULT_FIELDS, ["uuid", "status", "claim"])
_DEVICE_PUSHED = PreparedUpdate(PushDevice, ["last_pushed_at"], ["pk"])


def attempt(message_id: str, *, now: dt.datetime | None = None) -> str:
    """One attempt at a message that is due: 'sent', 'retry', 'dead', 'failed', 'cancelled', or
    'skipped' when it is not due (done, claimed by another run, waiting for its grace or backoff)."""
    now = now or timezone.now()
    timeout = float(_conf("PUSH_TIMEOUT"))
    try:
        message = uuid.UUID(str(message_id))
    except ValueError:
        return "skipped"
    with transaction.atomic():
        row = _CLAIM.first(message)
        due_at = row.next_attempt_at if row is not None else None
        if row is None or row.status != Status.PENDING or due_at is None or due_at > now + SKEW:
            return "skipped"
        if row.claim is not None:  # its lease ran out: the worker died mid-send
            _SET_CLOSED(Status.IN_DOUBT, None, "worker lost mid-send", row.pk)
            metrics.pushed(row.device.kind, "in_doubt")
            return "in_doubt"
        device: PushDevice = row.device
        why_not = _still_wanted(row, now)
        if why_not == "unsure":  # Redis cannot say who is watching (it restarts): ask again shortly
            again = now + dt.timedelta(seconds=UNSURE_WAIT)
            _SET_DUE(again, again, row.pk)
            ids = [str(row.uuid)]
            transaction.on_commit(lambda: recording.queue(ids, countdown=UNSURE_WAIT))
            return "retry"
        credential = None if why_not else credentials.credential_for(device.scope, device.kind)
        if why_not or credential is None:
            error = why_not or "no_credentials"
            outcome = "cancelled" if why_not else "failed"
            _SET_CLOSED(Status.CANCELLED if why_not else Status.FAILED, None, error, row.pk)
            metrics.pushed(device.kind, outcome)
            log.info("push %s: %s (%s)", message_id, outcome, error)
            return outcome
        row.attempts += 1
        row.claim = uuid.uuid4()
        lease = now + dt.timedelta(seconds=timeout + float(_conf("PUSH_LEASE_MARGIN")))
        _SET_CLAIM(row.attempts, lease, row.claim, row.pk)
    claim, table = row.claim, row.table
    player = device.player
    note = texts.note(
        row.kind,
        table=table.pk if table is not None else 0,
        language=texts.language_of(player.language, device.language),
        message=str(row.uuid),
        phase=recording.phase_word(table),
        name=_name_for(row),
        deadline=table.deadline if table is not None else None,
        now=now,
    )
    target = Target(kind=device.kind, token=device.token, keys=dict(device.keys or {}), topic=device.topic)
    metrics.push_lag(device.kind, (timezone.now() - row.not_before).total_seconds())
    started = time.monotonic()
    try:
        out: Outcome = _provider(device.kind).send(credential, target, note, timeout)
    except Exception as exc:  # a provider module's bug must not leave the claim to look like a dead worker
        log.exception("push %s: the %s sender failed", message_id, device.kind)
        out = Outcome("retry", error=f"{type(exc).__name__}")
    done = now + dt.timedelta(seconds=time.monotonic() - started)
    return _record_result(row, claim, device, out, done)


def _name_for(row: PushMessage) -> str:
    """Who offered the rematch: a seated player's name (public at the table)."""
    table = row.table
    if table is None:
        return ""
    if row.kind == "rematch":
        voters = [v for v in table.rematch_votes if v != row.device.player_id]
        names = {s["player"]: s["name"] for s in table.seating if s["player"] is not None}
        return str(names.get(voters[0], "")) if voters else ""
    return ""


def _record_result(
    row: PushMessage, claim: uuid.UUID, device: PushDevice, out: Outcome, done: dt.datetime
) -> str:
    """Keep what the provider answered, in one conditional update: none when the claim no longer
    holds ('superseded': the message was closed or taken meanwhile)."""
    error = out.error[:300]
    outcome, wait = out.result, 0.0
    retry = out.result == "retry" and row.attempts < int(_conf("PUSH_MAX_ATTEMPTS"))
    with transaction.atomic():
        if out.result == "sent":
            values = [None, out.status, error, Status.SENT, done, None, row.queued_at]
        elif retry:
            wait = out.retry_after if out.retry_after is not None else backoff(row.attempts)
            wait = min(max(wait, 0.0), float(_conf("PUSH_BACKOFF_MAX")))
            again = done + dt.timedelta(seconds=wait)
            values = [None, out.status, error, Status.PENDING, None, again, again]
        else:
            values = [None, out.status, error, Status.FAILED, None, None, row.queued_at]
            outcome = "dead" if out.result == "dead" else "failed"
        if not _SET_RESULT(*values, row.uuid, Status.PENDING, claim):
            return "superseded"
        if out.result == "sent":
            _DEVICE_PUSHED(done, device.pk)
        elif retry:
            ids = [str(row.uuid)]
            transaction.on_commit(lambda: recording.queue(ids, countdown=wait))
        if outcome == "dead":  # the provider says the token is gone: so is the device (and its messages)
            PushDevice.objects.filter(pk=device.pk).delete()
            recording.forget(device.player_id)
    metrics.pushed(device.kind, outcome)
    log.info("push %s attempt: %s (%s)", row.uuid, outcome, out.status or out.error)
    return outcome


# -- the safety net ----------------------------------------------------------------------------


def due(now: dt.datetime | None = None) -> Any:
    now = now or timezone.now()
    return PushMessage.objects.filter(status=Status.PENDING, next_attempt_at__lte=now)


def deliver_due(limit: int = 100) -> int:
    """Attempt every message due now, here and one after another; how many were tried."""
    ids = [str(u) for u in due().order_by("next_attempt_at").values_list("uuid", flat=True)[:limit]]
    for message_id in ids:
        with tracing.resumed(tracing.recall(message_id)):  # an eager run's trace (recording.queue)
            attempt(message_id)
    return len(ids)


_sender: threading.Thread | None = None
_sender_lock = threading.Lock()
SWEEP_GRACE = dt.timedelta(seconds=5)  # due for longer than this: its task was lost ...
REQUEUE_AFTER = dt.timedelta(seconds=30)  # ... unless it was queued again since


def sweep(*, inline: bool = False, limit: int = 500) -> int:
    """Called by games.sweep. With workers: queue again each message due for longer than SWEEP_GRACE
    whose task was queued over REQUEUE_AFTER ago (lost with Redis or a killed worker; an expired
    claim becomes in_doubt when its task runs). Embedded (`inline`): hand what is due to one
    background sender thread, so a slow provider never holds up the clocks."""
    global _sender
    now = timezone.now()
    devices.prune_expired(now)
    if inline:
        if not due(now).exists():
            return 0
        with _sender_lock:
            if _sender is not None and _sender.is_alive():
                return 0
            _sender = threading.Thread(target=_send_due, name="hearts-push-sender", daemon=True)
            _sender.start()
        return 1
    lost = due(now - SWEEP_GRACE).filter(Q(queued_at__lte=now - REQUEUE_AFTER) | Q(queued_at=None))
    ids = [str(u) for u in lost.values_list("uuid", flat=True)[:limit]]
    if ids:
        PushMessage.objects.filter(uuid__in=ids).update(queued_at=now)
        for message_id in ids:
            jobs.deliver_push(message_id)
        log.info("sweep queued %d push messages again", len(ids))
    return len(ids)


def _send_due() -> None:
    try:
        while deliver_due():
            time.sleep(0)
    except Exception:
        log.exception("embedded push sender failed")
    finally:
        connection.close()
