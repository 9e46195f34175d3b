"""Stream tickets on a real ASGI server: a browser-style client (no Authorization header) opens its
streams with a ticket through the standard SSE clients (httpx-sse, sseclient-py) and Chromium's
EventSource, every message carrying JSON data from the first one; tickets are scoped, expire and
die with their token."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sseclient
from httpx_sse import connect_sse

from games import accounts
from games.accounts import app_create
from tests.conftest import skip_or_fail
from tests.e2e.test_web_client import CHROMIUM
from tests.streams.test_streams import CARD, Visibility, _guest, _table

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the server must see committed rows
]


def _ticket(base: str, path: str, auth: dict[str, str]) -> dict[str, Any]:
    r = httpx.post(f"{base}/api/v1/{path}", json={}, headers=auth)
    assert r.status_code == 201, r.text
    return dict(r.json())


def _refused(response: httpx.Response, status: int, code: str) -> None:
    assert (response.status_code, response.json()["code"]) == (status, code), response.text


def _httpx_sse_events(url: str, headers: dict[str, str] | None = None) -> Iterator[Any]:
    with (
        httpx.Client(timeout=30) as client,
        connect_sse(client, "GET", url, headers=dict(headers or {})) as source,
    ):
        assert source.response.status_code == 200
        yield from source.iter_sse()


def test_a_browser_style_client_follows_its_streams_with_tickets(web: Callable[..., str]) -> None:
    base = web()
    auth = _guest(base, "browser")
    table_id = _table(base, auth, target=100)  # no worker: the bots wait, the game is at its passes
    token = auth["Authorization"].removeprefix("Bearer ")

    issued = _ticket(base, f"tables/{table_id}/stream-tickets", auth)
    assert set(issued) == {"ticket", "expires_at", "url"} and token not in json.dumps(issued)
    assert 50 <= datetime.fromisoformat(issued["expires_at"]).timestamp() - time.time() <= 61
    url = urlsplit(issued["url"])
    assert url.path == f"/api/v1/tables/{table_id}/stream"
    assert parse_qs(url.query) == {"ticket": [issued["ticket"]]}

    # httpx-sse, no Authorization: every message's data is JSON, the first one included.
    events = []
    for sse in _httpx_sse_events(issued["url"]):
        events.append((sse, json.loads(sse.data)))
        if events[-1][1]["type"] == "your_turn":
            break
    first, state = events[0]
    assert first.event == "state" and first.retry == 2000 and first.id == str(state["state"]["version"])
    # The ticket's stream is the caller's own view: the REST body of the table for their token.
    assert state["state"] == httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth).json()
    assert state["state"]["your_seat"] == 0 and len(state["state"]["game"]["hand"]) == 13
    visibility = Visibility(0)
    for _, data in events:
        visibility.check(data)
    assert events[-1][1]["legal_actions"]["type"] == "pass"

    # The same ticket reopens the stream while it lasts, resuming after the last id received.
    cards = events[-1][1]["legal_actions"]["from"][:3]
    body = {"type": "pass", "cards": cards, "expected_version": events[-1][1]["version"]}
    assert httpx.post(f"{base}/api/v1/tables/{table_id}/actions", json=body, headers=auth).status_code == 200
    resumed = []
    for sse in _httpx_sse_events(issued["url"], {"Last-Event-ID": events[-1][0].id}):
        resumed.append(json.loads(sse.data))
        if resumed[-1]["type"] == "pass_submitted":
            break
    assert resumed[0]["type"] == "pass_submitted" and resumed[0]["seat"] == 0

    # sseclient-py over the player's stream, with a player-stream ticket.
    mine = _ticket(base, "me/stream-tickets", auth)
    assert urlsplit(mine["url"]).path == "/api/v1/me/stream"
    with httpx.stream("GET", mine["url"], timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["RateLimit-Policy"].startswith('"token";q=')  # opening a stream counts
        messages = sseclient.SSEClient(response.iter_bytes()).events()
        message = next(messages)
    tables = json.loads(message.data)
    assert message.event == "tables" and [t["id"] for t in tables["tables"]] == [table_id]
    game = tables["tables"][0]["game"]
    assert game["passed"][0] and sorted(game["my_pass"]["cards"]) == sorted(cards)  # theirs alone

    # A spectator (a guest not seated: guests share the guest tables) sees no hand at all.
    spectator = _ticket(base, f"tables/{table_id}/stream-tickets", _guest(base, "watcher"))
    sse = next(_httpx_sse_events(spectator["url"]))
    watched = json.loads(sse.data)["state"]
    assert watched["your_seat"] is None and watched["game"]["passed"][0]
    # Nobody has played a card yet: a spectator's view holds no card at all.
    assert not CARD.findall(json.dumps({k: v for k, v in watched["game"].items() if k != "options"}))


def test_tickets_open_only_their_own_stream_while_they_last(web: Callable[..., str]) -> None:
    base = web()
    auth = _guest(base, "scoped")
    table_a, table_b = _table(base, auth, target=100), _table(base, auth, target=100)
    ticket = _ticket(base, f"tables/{table_a}/stream-tickets", auth)["ticket"]
    player_ticket = _ticket(base, "me/stream-tickets", auth)["ticket"]
    stream_b = f"{base}/api/v1/tables/{table_b}/stream"

    _refused(httpx.get(stream_b, params={"ticket": ticket}), 401, "ticket_invalid")  # another table
    _refused(httpx.get(f"{base}/api/v1/me/stream", params={"ticket": ticket}), 401, "ticket_invalid")
    _refused(httpx.get(stream_b, params={"ticket": player_ticket}), 401, "ticket_invalid")
    _refused(httpx.get(stream_b, params={"ticket": ticket[:-2] + "xx"}), 401, "ticket_invalid")  # altered
    _refused(httpx.get(stream_b, params={"ticket": "nonsense"}), 401, "ticket_invalid")
    # Never both credentials; the bearer token in the query string stays refused; a ticket is
    # no bearer token.
    both = httpx.get(f"{base}/api/v1/tables/{table_a}/stream", params={"ticket": ticket}, headers=auth)
    _refused(both, 401, "ticket_invalid")
    token = auth["Authorization"].removeprefix("Bearer ")
    _refused(httpx.get(stream_b, params={"token": token}), 401, "not_authenticated")
    _refused(httpx.get(stream_b, headers={"Authorization": f"Bearer {ticket}"}), 401, "authentication_failed")

    # Expired: a ticket issued 61 s ago (the server shares the test's SECRET_KEY).
    principal = accounts.authenticate(token)
    assert principal is not None
    with mock.patch("time.time", return_value=time.time() - 61):
        old, _ = accounts.stream_ticket(principal, f"table:{table_a}")
    stream_a = f"{base}/api/v1/tables/{table_a}/stream"
    _refused(httpx.get(stream_a, params={"ticket": old}), 401, "ticket_expired")

    # Issuing: a table the caller cannot see is not found; the player stream needs a player.
    _, key = app_create(name="elsewhere")
    app_auth = {"Authorization": f"Bearer {key}"}
    refused = httpx.post(f"{base}/api/v1/tables/{table_a}/stream-tickets", json={}, headers=app_auth)
    _refused(refused, 404, "not_found")
    _refused(
        httpx.post(f"{base}/api/v1/me/stream-tickets", json={}, headers=app_auth),
        422,
        "player_token_required",
    )
    _refused(httpx.post(f"{base}/api/v1/me/stream-tickets", json={}), 401, "not_authenticated")
    _refused(
        httpx.post(f"{base}/api/v1/me/stream-tickets", json={"x": 1}, headers=auth), 400, "invalid_input"
    )

    # A revoked token's tickets die with it, even unexpired.
    assert httpx.post(f"{base}/api/v1/tokens/revoke", json={}, headers=auth).status_code == 204
    _refused(httpx.get(stream_a, params={"ticket": ticket}), 401, "ticket_invalid")
    _refused(httpx.get(f"{base}/api/v1/me/stream", params={"ticket": player_ticket}), 401, "ticket_invalid")


def test_chromiums_eventsource_follows_a_table_with_a_ticket(web: Callable[..., str]) -> None:
    """A real browser: EventSource cannot send headers, so the page fetches a ticket with the
    token and opens the ticket's URL; every message it gets parses as JSON, the first included."""
    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    base = web()
    auth = _guest(base, "chromium")
    table_id = _table(base, auth, target=100)
    script = """async ([tableId, token]) => {
        const r = await fetch(`/api/v1/tables/${tableId}/stream-tickets`,
            {method: "POST", headers: {Authorization: `Bearer ${token}`, "Content-Type": "application/json"},
             body: "{}"});
        const {url} = await r.json();
        return await new Promise((resolve, reject) => {
            const got = [];
            const source = new EventSource(url);
            const keep = (e) => {
                got.push({event: e.type, data: JSON.parse(e.data), id: e.lastEventId});
                if (e.type === "your_turn") { source.close(); resolve(got); }
            };
            for (const type of ["state", "your_turn", "message"]) source.addEventListener(type, keep);
            source.onerror = () => { source.close(); reject(new Error("stream failed")); };
        });
    }"""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{base}/healthz")  # any page of the API's origin
            token = auth["Authorization"].removeprefix("Bearer ")
            got = page.evaluate(script, [table_id, token])
        finally:
            browser.close()
    assert [m["event"] for m in got] == ["state", "your_turn"]
    assert got[0]["data"]["state"]["your_seat"] == 0 and got[0]["id"] == got[0]["data"]["id"]
    assert got[1]["data"]["legal_actions"]["type"] == "pass"


def test_keepalives_never_reach_sse_clients_as_empty_events(web: Callable[..., str]) -> None:
    """An idle stream's keep-alives (every 0.2 s here) are comment lines that httpx-sse and
    sseclient-py both skip: two idle seconds after the opening event of a player waiting at a table
    yield no message at all (a comment followed by a blank line made httpx-sse, which keeps the last
    event id, yield empty ones)."""
    from httpx_sse import EventSource

    base = web(STREAM_KEEPALIVE_SECONDS="0.2")
    auth = _guest(base, "idle")
    table = httpx.post(f"{base}/api/v1/tables", json={}, headers=auth).json()
    httpx.post(f"{base}/api/v1/tables/{table['id']}/join", json={}, headers=auth).raise_for_status()
    chunks: list[bytes] = []
    with httpx.stream("GET", f"{base}/api/v1/me/stream", headers=auth, timeout=10) as response:
        stop = time.monotonic() + 2
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() > stop:
                break
    body = b"".join(chunks)
    assert body.count(b": keep-alive\n") >= 5  # the keep-alives did flow

    replay = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    received = list(EventSource(replay).iter_sse())
    assert received[0].id  # an event id that clients keep (an empty one would hide the fault)
    assert [s.event for s in received] == ["tables"] and json.loads(received[0].data)["tables"][0][
        "id"
    ] == table["id"]
    events = list(sseclient.SSEClient(iter(chunks)).events())
    assert [e.event for e in events] == ["tables"] and all(e.data for e in events)
