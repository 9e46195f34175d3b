"""Pushes through the deployed pieces (PostgreSQL, Redis, uvicorn, Celery workers on the `push` lane) to a
local Web Push service: a person who plays a hand with their stream open gets no push; once they
close it, exactly one push per turn; a worker killed while the provider holds its request repeats
nothing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from games import push
from games.engine import state_from_dict
from games.models import PushMessage, Table
from tests.push.providers import FakeWebPush

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),
]
CARD = re.compile(r"\b(?:10|[2-9TJQKA])[CDHS]\b")
ENV = {"PUSH_GRACE_SECONDS": "1", "WEBHOOK_ALLOW_PRIVATE_HOSTS": "true", "BOT_PACE_MS": "0"}


def until(check: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds}s: {what}")


class Person:
    """A guest playing through the REST API of a live server, with a browser's push subscription."""

    def __init__(self, base: str, fake: FakeWebPush) -> None:
        self.http = httpx.Client(base_url=base + "/api/v1", timeout=10)
        answer = self.http.post("/guests", json={"name": "Pocket"})
        assert answer.status_code == 201, answer.text
        self.http.headers["Authorization"] = f"Bearer {answer.json()['token']}"
        key = self.http.get("/push/vapid-key").json()["public_key"]
        sub = fake.subscription(server_key=key)  # as PushManager.subscribe({applicationServerKey: key})
        answer = self.http.post(
            "/me/devices", json={"kind": "webpush", "token": sub["endpoint"], "keys": sub["keys"]}
        )
        assert answer.status_code == 201, answer.text

    def table_with_bots(self) -> int:
        answer = self.http.post("/tables", json={"bots": {"1": "random", "2": "random", "3": "random"}})
        assert answer.status_code == 201, answer.text
        table_id = int(answer.json()["id"])
        assert self.http.post(f"/tables/{table_id}/join", json={"position": 0}).status_code == 200
        return table_id

    def my_turn(self, table_id: int) -> Any:
        """The legal action for seat 0 when it is its turn (read from the database), else None."""
        table = Table.objects.get(pk=table_id)
        if table.state is None or table.status not in (Table.Status.PASSING, Table.Status.PLAYING):
            return None
        state = state_from_dict(table.state)
        return state.legal_actions(0)[0].to_dict() if 0 in state.to_act() else None

    def act(self, table_id: int, action: dict[str, Any]) -> None:
        answer = self.http.post(f"/tables/{table_id}/actions", json=action)
        assert answer.status_code == 200, answer.text


def follow(base: str, token: str, table_id: int, stop: threading.Event, seen: list[str]) -> None:
    """The person's SSE stream of the table, open until `stop`."""
    headers = {"Authorization": token, "Accept": "text/event-stream"}
    with httpx.stream("GET", f"{base}/api/v1/tables/{table_id}/stream", headers=headers, timeout=None) as r:
        for line in r.iter_lines():
            if line.startswith("event:"):
                seen.append(line)
            if stop.is_set():
                return


def test_no_push_while_the_stream_is_open_then_exactly_one_per_turn(
    web: Callable[..., str], workers: Callable[..., subprocess.Popen[bytes]]
) -> None:
    with FakeWebPush() as fake:
        base = web(**ENV)
        workers(queues="clocks,people,bots,push", beat=True, **ENV)
        person = Person(base, fake)
        table_id = person.table_with_bots()
        stop, seen = threading.Event(), []
        reader = threading.Thread(
            target=follow,
            args=(base, person.http.headers["Authorization"], table_id, stop, seen),
            daemon=True,
        )
        reader.start()
        until(lambda: seen, 10, "the stream's first event")
        watched = 0
        while watched < 4:  # the pass and three cards, each after longer than the grace and a sweep
            action = until(lambda: person.my_turn(table_id), 30, "seat 0's turn")
            time.sleep(2.5)
            person.act(table_id, action)
            watched += 1
        assert fake.received == [], "a push reached a player whose stream was open"
        stop.set()
        reader.join(15)  # the next event ends the read

        turns = 0
        while True:
            action = until(
                lambda: person.my_turn(table_id) or Table.objects.get(pk=table_id).hand_number > 1,
                30,
                "a turn",
            )
            if action is True or Table.objects.get(pk=table_id).hand_number > 1:
                break
            turns += 1
            until(lambda n=turns: len(fake.received) == n, 15, f"push {turns}")
            person.act(table_id, action)
        time.sleep(2.5)  # any push left over would arrive by now
        assert turns >= 9
        assert len(fake.received) == turns + (1 if person.my_turn(table_id) else 0)
        kinds = [r["payload"]["data"]["kind"] for r in fake.received]
        assert set(kinds) == {"turn"}
        ids = [r["payload"]["data"]["message"] for r in fake.received]
        assert len(set(ids)) == len(ids)
        assert not CARD.search(json.dumps([r["payload"] for r in fake.received]))


def test_a_worker_killed_while_the_provider_holds_its_request_repeats_nothing(
    web: Callable[..., str], workers: Callable[..., subprocess.Popen[bytes]]
) -> None:
    with FakeWebPush() as fake:
        base = web(**ENV)
        workers(queues="clocks,people,bots", beat=True, **ENV)
        sender = workers(queues="push", **ENV)
        fake.delay(30)  # the provider has the message at once but answers late: the sender waits
        person = Person(base, fake)
        table_id = person.table_with_bots()
        until(lambda: fake.received, 30, "the pass's push at the provider")
        os.killpg(sender.pid, signal.SIGKILL)  # mid-send: it never learns the provider has it
        sender.wait()
        workers(queues="push", **ENV)  # its task comes back (late acks) to a new worker
        time.sleep(8)  # the redelivered task and several sweeps have run
        assert fake.requests == 1, "the push was sent again"
        row = PushMessage.objects.get(table_id=table_id, kind="turn")
        assert row.status == "pending" and row.claim is not None  # claimed, in flight, not repeated
        assert row.next_attempt_at is not None
        assert push.attempt(str(row.uuid), now=row.next_attempt_at) == "in_doubt"  # once the lease is over
        assert fake.requests == 1
