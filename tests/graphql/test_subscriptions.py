"""GraphQL subscriptions on a live server with gql's WebsocketsTransport, in both protocols: whole games.

Four people play whole games with mutations sent on their own sockets while every kind of viewer
(each seat, a spectator, the app key, a seat's `myEvents`) follows the table by subscription. Every
message is checked as it arrives (no card the viewer may not see), and after the game each viewer's
events are compared with the SSE stream of the same viewer: the same ids, the same events, no gap
and no repeat, across a socket dropped mid-game and resumed with `after`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

from games.accounts import app_create, player_create
from games.graphql.schema import schema
from tests.graphql.test_graphql import _selection
from tests.streams.test_streams import CARD, PUBLIC_AFTER, Visibility

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = [WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL, WebsocketsTransport.APOLLO_SUBPROTOCOL]
NO_CLOCKS = {"pass": None, "play": None, "moon": None}


def _subscription(root_field: str, args: str) -> str:
    """Every field of every message type; of a state's table, the seats and the whole game view (a
    table in full is over the cost limit, as it is for a query)."""
    gs = schema.graphql_schema
    kinds = gs.get_possible_types(gs.get_type("StreamEvent"))  # type: ignore[arg-type]
    types: dict[str, set[str]] = {}
    for kind in kinds:
        for name, field in kind.fields.items():
            types.setdefault(name, set()).add(str(field.type))
    clash = frozenset(n for n, t in types.items() if len(t) > 1)
    game = _selection(gs.get_type("Game"), {})  # type: ignore[arg-type]
    table = f"id version yourSeat delayed seats {{ position player name bot }} game {{ {game} }}"
    parts = []
    for kind in kinds:
        if kind.name == "TableStateEvent":
            inner = f"id table state {{ {table} }}"
        elif kind.name == "MyTablesEvent":
            inner = f"id tables {{ {table} }}"
        else:
            inner = _selection(kind, {}, aliased=clash)
        parts.append(f"... on {kind.name} {{ {inner} }}")
    call = f"({args})" if args else ""
    return f"subscription {{ {root_field}{call} {{ __typename {' '.join(parts)} }} }}"


def _snake(value: Any) -> Any:
    """A GraphQL answer in the REST and stream shape: snake_case keys, no __typename, no type aliases."""
    if isinstance(value, list):
        return [_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "__typename":
            continue
        key = key.split("_", 1)[1] if re.match(r"[A-Z]\w*Event_", key) else key  # aliased by type
        out[re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()] = _snake(item)
    return out


def _as_stream_event(message: dict[str, Any]) -> dict[str, Any]:
    kind = message["__typename"]
    event = _snake(message)
    if kind == "TableStateEvent":
        return {**event, "type": "state"}
    if kind == "MyTablesEvent":
        return {**event, "type": "tables"}
    if kind == "YourTurnEvent":
        return {**event, "type": "your_turn"}
    return event


def _rest_shape(event: dict[str, Any]) -> dict[str, Any]:
    """A stream event without the envelope fields, and its nulls dropped (GraphQL answers every
    field of its type; a REST event leaves out what it does not have)."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean({k: v for k, v in event.items() if k not in ("id", "table")})


def _sse(base: str, path: str, auth: dict[str, str], last: str) -> list[dict[str, Any]]:
    headers = {**auth, "Last-Event-ID": last}
    out = []
    with httpx.stream("GET", f"{base}{path}?format=ndjson", headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                out.append(json.loads(line))
    return out


class Viewer:
    """One follower of the table: its messages in order, each checked for hidden cards."""

    def __init__(self, name: str, token: str, seat: int | None) -> None:
        self.name, self.token, self.seat = name, token, seat
        self.messages: list[dict[str, Any]] = []
        self.visibility = Visibility(seat) if seat is not None else None
        self.played: set[str] = set()
        self.hand = 0

    def check(self, event: dict[str, Any]) -> None:
        if event["type"] == "tables":  # myEvents' first message: the state of each of the tables
            for table in event["tables"]:
                self.check({"type": "state", "state": table})
            return
        if self.visibility is not None:
            self.visibility.check(event)
            return
        # Not seated: only public cards, ever (played ones; a finished hand's record).
        kind = event["type"]
        if event.get("hand", self.hand) != self.hand:
            self.hand, self.played = event["hand"], set()
        cards = set(CARD.findall(json.dumps({k: v for k, v in event.items() if k != "options"})))
        if kind == "card_played":
            self.played.add(event["card"])
        elif kind == "state":
            game = event["state"]["game"] or {}
            self.hand = game.get("hand_number", self.hand)
            self.played = set(CARD.findall(json.dumps([game.get("trick"), game.get("tricks")])))
            assert not game.get("hand"), f"{self.name} sees a hand: {game.get('hand')}"
        elif kind not in PUBLIC_AFTER:
            assert cards <= self.played, f"{kind} shows {cards - self.played} to {self.name}"


def _transport(base: str, token: str, protocol: str) -> WebsocketsTransport:
    url = base.replace("http://", "ws://") + "/graphql/"
    return WebsocketsTransport(
        url=url, init_payload={"Authorization": f"Bearer {token}"}, subprotocols=[protocol]
    )


MOVE = {  # a seat's action, as a mutation on its own socket
    kind: f"mutation($t: Int!, $c: {ctype}, $v: Int) {{ {field}(tableId: $t, {arg}: $c, expectedVersion: $v) "
    "{ errors { code } } }"
    for kind, field, arg, ctype in [
        ("pass", "passCards", "cards", "[String!]!"),
        ("play", "playCard", "card", "String!"),
        ("moon", "chooseMoon", "choice", "String!"),
    ]
}


async def _follow(
    viewer: Viewer,
    base: str,
    protocol: str,
    table_id: int,
    rng: random.Random | None,
    drop_after: int | None = None,
    mine: bool = False,
) -> None:
    """Follow the table to its end (acting on `your_turn` with mutations on the same socket when
    `rng` is given); with `drop_after`, close the socket after that many messages and resume on a
    new one with `after` (in the other protocol)."""
    after: str | None = None
    protocols = [protocol, next(p for p in PROTOCOLS if p != protocol)]
    for attempt, proto in enumerate(protocols):
        args = f"tableId: {table_id}" if not mine else ""
        if after is not None:
            args += (", " if args else "") + f'after: "{after}"'
        field = "myEvents" if mine else "tableEvents"
        query = gql(_subscription(field, args))
        async with Client(transport=_transport(base, viewer.token, proto)) as session:
            count = 0
            async for data in session.subscribe(query):
                message = data[field]
                event = _as_stream_event(message)
                viewer.messages.append(event)
                viewer.check(event)
                after = message["id"]
                count += 1
                if event["type"] == "your_turn" and rng is not None:
                    legal = event["legal_actions"]
                    if legal["type"] == "pass":
                        chosen: Any = rng.sample(legal["from"], legal["count"])
                    elif legal["type"] == "moon":
                        chosen = rng.choice(legal["choices"])
                    else:
                        chosen = rng.choice(legal["cards"])
                    variables = {"t": table_id, "c": chosen, "v": event["version"]}
                    answer = await session.execute(gql(MOVE[legal["type"]]), variable_values=variables)
                    assert next(iter(answer.values()))["errors"] == [], answer
                if mine and event["type"] == "table_finished":
                    return
                if drop_after is not None and attempt == 0 and count >= drop_after:
                    break
            else:
                return  # the subscription completed: the table is over


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_whole_game_over_subscriptions_shows_every_viewer_exactly_its_stream(
    web: Callable[..., str], protocol: str
) -> None:
    base = web()
    app, key = app_create(name="subscriptions")
    people = [player_create(app=app, name=f"p{i}") for i in range(4)]
    _, watcher = player_create(app=app, name="watcher")
    auths = [{"Authorization": f"Bearer {token}"} for _, token in people]
    body: dict[str, Any] = {"clocks": NO_CLOCKS, "options": {"target_score": 50}}
    if protocol == PROTOCOLS[0]:  # a delayed spectator too: one trick behind, by the same code path
        body["spectator_delay"] = {"tricks": 1}
    table = httpx.post(f"{base}/api/v1/tables", json=body, headers=auths[0]).json()
    table_id = int(table["id"])
    seats = [Viewer(f"seat {i}", token, i) for i, (_, token) in enumerate(people)]
    others = [Viewer("spectator", watcher, None), Viewer("app", key, None)]
    mine = Viewer("seat 0 myEvents", people[0][1], 0)

    async def game() -> None:
        rngs = [random.Random(seat) for seat in range(4)]
        tasks = [
            asyncio.create_task(
                _follow(v, base, protocol, table_id, rngs[i], drop_after=40 if i == 1 else None)
            )
            for i, v in enumerate(seats)
        ]
        tasks += [asyncio.create_task(_follow(v, base, protocol, table_id, None)) for v in others]
        for auth in auths:  # everyone sits down once the followers are subscribed
            await asyncio.sleep(0.2)
            r = httpx.post(f"{base}/api/v1/tables/{table_id}/join", json={}, headers=auth)
            assert r.status_code == 200, r.text
        tasks.append(asyncio.create_task(_follow(mine, base, protocol, table_id, None, mine=True)))
        await asyncio.wait_for(asyncio.gather(*tasks), 240)

    asyncio.run(game())
    if "spectator_delay" in body:
        assert others[0].messages[0]["state"]["delayed"] is True  # the spectator is one trick behind
    for viewer in [*seats, *others]:
        first = viewer.messages[0]
        assert first["type"] == "state", viewer.name
        logged = [m for m in viewer.messages if m["type"] not in ("state", "your_turn")]
        assert logged[-1]["type"] == "table_finished", viewer.name
        # The SSE stream of the same viewer, from the same first position: the same ids and events.
        sse = _sse(
            base,
            f"/api/v1/tables/{table_id}/stream",
            {"Authorization": f"Bearer {viewer.token}"},
            first["id"],
        )
        assert [e["id"] for e in logged] == [e["id"] for e in sse], viewer.name
        assert [_rest_shape(e) for e in logged] == [_rest_shape(e) for e in sse], viewer.name
        ids = [m["id"] for m in logged]
        assert len(ids) == len(set(ids)), f"{viewer.name}: a message repeated"
    turns = [sum(m["type"] == "your_turn" for m in v.messages) for v in seats]
    assert min(turns) >= 13, turns
    # A seat's own cards reach that seat only; the others never see a dealt hand.
    assert any(m["type"] == "cards_dealt" for m in seats[2].messages)
    assert not any(
        m["type"] in ("cards_dealt", "cards_received", "cards_passed") for v in others for m in v.messages
    )
    # myEvents: the player's tables first, then this table's events as its seat sees them.
    assert mine.messages[0]["type"] == "tables"
    assert [_rest_shape(m) for m in mine.messages if m["type"] not in ("tables", "your_turn", "state")] == [
        _rest_shape(m) for m in seats[0].messages if m["type"] not in ("state", "your_turn")
    ][-len([m for m in mine.messages if m["type"] not in ("tables", "your_turn", "state")]) :]
