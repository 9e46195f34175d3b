"""Event streams on real ASGI servers, PostgreSQL, Redis and Celery workers: a person plays whole
games from a stream served by one web process while acting through another, reconnects with
Last-Event-ID without missing or repeating an event, and never sees a card they may not see."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from games.accounts import app_create
from games.errors import ServiceError
from games.live.events import Position, format_player_position, parse_player_position

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
CARD = re.compile(r"\b(?:10|[2-9TJQKA])[CDSH]\b")
REVEALING = {"cards_dealt", "cards_received", "cards_passed"}  # a seat's own cards, to that seat only
PUBLIC_AFTER = {"hand_scored", "hand_revealed", "game_over", "table_finished"}  # a hand is over


def _guest(base: str, name: str) -> dict[str, str]:
    token = httpx.post(f"{base}/api/v1/guests", json={"name": name}).json()["token"]
    return {"Authorization": f"Bearer {token}"}


def _table(base: str, auth: dict[str, str], target: int, level: str = "basic") -> int:
    body = {
        "options": {"target_score": target},
        "bots": {str(s): level for s in (1, 2, 3)},
        "clocks": {"pass": None, "play": None, "moon": None},
    }
    table = httpx.post(f"{base}/api/v1/tables", json=body, headers=auth).json()
    assert httpx.post(f"{base}/api/v1/tables/{table['id']}/join", json={}, headers=auth).status_code == 200
    return int(table["id"])


def _action(legal: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if legal["type"] == "pass":
        return {"type": "pass", "cards": rng.sample(legal["from"], legal["count"])}
    if legal["type"] == "moon":
        return {"type": "moon", "choice": rng.choice(legal["choices"])}
    return {"type": "play", "card": rng.choice(legal["cards"])}


def _lines(base: str, path: str, auth: dict[str, str], last: str | None) -> Iterator[dict[str, Any]]:
    headers = {**auth, **({"Last-Event-ID": last} if last else {})}
    with httpx.stream("GET", f"{base}{path}?format=ndjson", headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                yield json.loads(line)


class Visibility:
    """Follows one seat's events in order: a card may appear only once the seat has seen it
    (dealt or passed to it, or played), except in the public record of a finished hand."""

    def __init__(self, seat: int) -> None:
        self.seat, self.seen, self.hand = seat, set[str](), 0

    def check(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if event.get("hand", self.hand) != self.hand:
            self.hand, self.seen = event["hand"], set()
        cards = set(CARD.findall(json.dumps({k: v for k, v in event.items() if k != "options"})))
        if kind in REVEALING:
            assert event["seat"] == self.seat, f"another seat's cards: {event}"
            self.seen |= cards
        elif kind == "card_played":
            self.seen.add(event["card"])
        elif kind == "state":  # what the seat holds and sees now (checked by the REST crawl tests)
            game = event["state"]["game"]
            if game:
                self.hand = game["hand_number"]
                shown = [game["hand"], game["received"], game["tricks"], game.get("trick")]
                self.seen = set(CARD.findall(json.dumps(shown)))
        elif kind not in PUBLIC_AFTER:
            assert cards <= self.seen, f"{kind} shows {cards - self.seen} to seat {self.seat}"


def _nullable_to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema's type list, to validate with jsonschema."""
    if isinstance(node, list):
        return [_nullable_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable_to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") and "type" in node:
        out["type"] = [node["type"], "null"]
    elif node.get("nullable"):  # {"allOf": [...], "nullable": true}, or a bare $ref
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def _check_against_openapi(base: str, events: list[dict[str, Any]]) -> set[str]:
    """Every event matches its type's schema in the served OpenAPI document."""
    document = httpx.get(f"{base}/api/schema/?format=json").json()
    components = _nullable_to_json_schema(document["components"])
    for event in events:
        schema = {"$ref": f"#/components/schemas/Event_{event['type']}", "components": components}
        jsonschema.Draft7Validator(schema).validate(event)
    return {e["type"] for e in events}


def _events_over_rest(base: str, table_id: int, auth: dict[str, str], after: int) -> list[dict[str, Any]]:
    out = []
    while True:
        page = httpx.get(f"{base}/api/v1/tables/{table_id}/events?after={after}", headers=auth).json()
        out += page["events"]
        after = page["version"]
        if not page["more"]:
            return out


def test_a_person_plays_whole_games_from_a_stream_served_by_another_web_process(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    workers()
    # The stream's server polls only every 30 s: the game keeps pace only through Redis wake-ups
    # published by the other process after each commit.
    streamer, actor = web(STREAM_POLL_SECONDS="30"), web()
    auth = _guest(actor, "streamed")
    table_id = _table(actor, auth, target=50)
    rng, seen, ids, visibility = random.Random(7), [], [], Visibility(0)
    last: str | None = None
    reconnects = 0
    everything: list[dict[str, Any]] = []
    while True:
        ended = True
        for event in _lines(streamer, f"/api/v1/tables/{table_id}/stream", auth, last):
            assert event["type"] != "keepalive"
            everything.append(event)
            last = event["id"]
            ids.append(event["id"])
            visibility.check(event)
            if event["type"] == "your_turn":
                body = {**_action(event["legal_actions"], rng), "expected_version": event["version"]}
                r = httpx.post(f"{actor}/api/v1/tables/{table_id}/actions", json=body, headers=auth)
                assert r.status_code == 200, r.text
            elif event["type"] != "state":
                seen.append({k: v for k, v in event.items() if k not in ("id", "table")})
            if len(seen) > 60 * (reconnects + 1) and reconnects < 3:  # drop the connection mid-game
                reconnects += 1
                ended = False
                break
        if ended:
            break
    assert reconnects == 3
    assert seen[-1]["type"] == "table_finished"
    # Exactly the REST event log, in order: nothing missed, nothing repeated across reconnects.
    start = Position.parse(ids[0]).seq  # the first event is the state at this version
    assert seen == _events_over_rest(actor, table_id, auth, start)
    kinds = _check_against_openapi(streamer, everything)
    assert {"state", "your_turn", "cards_dealt", "cards_received", "trick_won", "hand_scored"} <= kinds
    # Ids only grow: `<seq>:<n>` of each logged event, `<seq>` for state and your_turn.
    keys = [(p.seq, 10**6 if p.index is None else p.index) for p in map(Position.parse, ids)]
    assert keys == sorted(keys)
    logged = [k for k, i in zip(keys, ids, strict=True) if ":" in i]
    assert len(set(logged)) == len(logged) == len(seen)
    # A finished table with nothing left: 204, which stops a browser's EventSource reconnecting.
    resume = {**auth, "Last-Event-ID": last or ""}
    done = httpx.get(f"{streamer}/api/v1/tables/{table_id}/stream", headers=resume)
    assert done.status_code == 204


def test_a_players_stream_covers_every_table_and_resumes(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    workers()
    base = web()
    auth = _guest(base, "two tables")
    tables = {_table(base, auth, target=100), _table(base, auth, target=100)}
    rng, turns, last = random.Random(3), dict.fromkeys(tables, 0), None
    first: dict[str, Any] | None = None
    for round_ in range(2):  # the second connection resumes from the first one's last id
        for event in _lines(base, "/api/v1/me/stream", auth, last):
            first = first or event
            last = event["id"]
            if event["type"] == "your_turn":
                turns[event["table"]] += 1
                body = {**_action(event["legal_actions"], rng), "expected_version": event["version"]}
                r = httpx.post(f"{base}/api/v1/tables/{event['table']}/actions", json=body, headers=auth)
                assert r.status_code == 200, r.text
            if min(turns.values()) >= 4 * (round_ + 1):
                break
    assert first is not None and first["type"] == "tables"
    assert {t["id"] for t in first["tables"]} == tables
    assert set(parse_player_position(last or "")) == tables
    assert min(turns.values()) >= 8


def test_stream_errors_and_keepalives(web: Callable[..., str]) -> None:
    base = web(STREAM_KEEPALIVE_SECONDS="0.5")
    auth = _guest(base, "errors")
    table_id = _table(base, auth, target=100)
    stream = f"{base}/api/v1/tables/{table_id}/stream"
    assert httpx.get(stream).json()["code"] == "not_authenticated"
    assert httpx.get(stream, headers={"Authorization": "Bearer nope"}).status_code == 401
    bad = httpx.get(stream, headers={**auth, "Last-Event-ID": "x1"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_last_event_id")
    future = httpx.get(stream, headers={**auth, "Last-Event-ID": "99999"})
    assert future.json()["code"] == "invalid_last_event_id"
    assert httpx.get(f"{base}/api/v1/tables/999999/stream", headers=auth).json()["code"] == "not_found"
    assert httpx.get(stream + "?format=xml", headers=auth).json()["code"] == "invalid_format"
    assert httpx.post(stream, headers=auth).status_code == 405
    # Another app's table is not found, as over REST; a player's stream needs a player's token.
    _, key = app_create(name="other app")
    app_auth = {"Authorization": f"Bearer {key}"}
    assert httpx.get(stream, headers=app_auth).json()["code"] == "not_found"
    refused = httpx.get(f"{base}/api/v1/me/stream", headers=app_auth)
    assert (refused.status_code, refused.json()["code"]) == (422, "player_token_required")
    # A player stream position naming a table of another app (a guest table) is dropped, never read.
    intruder = httpx.post(f"{base}/api/v1/players", json={"name": "eve"}, headers=app_auth).json()["token"]
    eve = {"Authorization": f"Bearer {intruder}"}
    with httpx.stream(
        "GET",
        f"{base}/api/v1/me/stream?format=ndjson",
        headers={**eve, "Last-Event-ID": f"{table_id}=0"},
        timeout=10,
    ) as response:
        assert response.status_code == 200
        lines = []
        for line in response.iter_lines():
            lines.append(json.loads(line))
            if lines[-1]["type"] == "keepalive":
                break
    assert all(e.get("table") != table_id for e in lines), lines
    # SSE framing, with keep-alive comments while nothing happens (no worker runs: the bots wait).
    with httpx.stream("GET", stream, headers=auth, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = ""
        for chunk in response.iter_text():
            text += chunk
            if text.count(": keep-alive") >= 2:
                break
    assert "retry: 2000" in text and "event: state" in text and f'"table":{table_id}' in text


def test_positions_parse_and_format() -> None:
    assert str(Position.parse("41:2")) == "41:2" and Position.parse("41") == Position(41)
    assert format_player_position({15: Position(20), 12: Position(41, 2)}) == "12=41:2,15=20"
    assert parse_player_position("12=41:2,15=20") == {12: Position(41, 2), 15: Position(20)}
    for bad in ("", "a", "1:", "1:2:3", "-1", "1.5"):
        with pytest.raises(ServiceError):
            Position.parse(bad)
    with pytest.raises(ServiceError):
        parse_player_position("12:41")
