"""GraphQL at parity with REST: the exported schema, whole games crawled field by field for hidden
cards, every mutation's success and error codes, idempotency, limits and query counts."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from graphql import (
    GraphQLInterfaceType,
    GraphQLNonNull,
    GraphQLObjectType,
    get_introspection_query,
    get_named_type,
)

from games.accounts import app_create
from games.engine import Options, State, state_to_dict
from games.graphql.schema import schema
from games.models import Move, Table
from tests.api.test_api import Secrets, client, own_cards

pytestmark = pytest.mark.django_db
TOKEN = re.compile(r"\b(?:10|[2-9TJQKA])[CDSH]\b")
ROOT = Path(__file__).resolve().parents[2]


def gql(query: str, token: str | None = None, status: int = 200, **variables: Any) -> dict[str, Any]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    r = Client().post(
        "/graphql/", {"query": query, "variables": variables}, content_type="application/json", **headers
    )
    assert r.status_code == status, r.content
    return r.json()


def ok(query: str, token: str | None = None, **variables: Any) -> dict[str, Any]:
    """Run a query or mutation that must succeed; the payload of a single mutation is returned."""
    body = gql(query, token, **variables)
    assert "errors" not in body, body
    data = body["data"]
    if query.lstrip().startswith("mutation") and len(data) == 1:
        payload = next(iter(data.values()))
        assert payload["errors"] == [], payload
        return payload
    return data


def guest(name: str = "g") -> str:
    return ok("mutation($n: String!) { createGuest(name: $n) { token errors { code } } }", n=name)["token"]


def test_schema_file_in_the_repository_matches_the_code() -> None:
    """Regenerate with: python manage.py graphql_schema --out schema.graphql"""
    assert (ROOT / "schema.graphql").read_text().strip() == str(schema).strip()


def test_graphiql_opens_in_a_browser() -> None:
    r = Client().get("/graphql/", HTTP_ACCEPT="text/html")
    assert r.status_code == 200 and b"graphiql" in r.content.lower()


# -- hidden information: every field path, for every seat, during whole games ---------------


def _selection(
    type_: GraphQLObjectType,
    args: dict[str, str],
    depth: int = 0,
    parent: str = "",
    aliased: frozenset[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> str:
    """Every field reachable from `type_` (arguments from `args`, by field name), but the moves of
    every hand (`Table.hands/Hand.moves`: the moves are crawled through `moves` and `hand`, and
    a whole game's log in one query is over the cost limit, as it should be). The `aliased`
    fields are aliased by type (event types with a field of one name and different types)."""
    parts = []
    for name, field in type_.fields.items():
        if only is not None and name not in only:
            continue
        label = f"{type_.name}_{name}: {name}" if name in aliased else name
        named = get_named_type(field.type)
        key = f"{type_.name}.{name}"
        call = f"({args[key]})" if key in args else ""
        if any(isinstance(a.type, GraphQLNonNull) for a in field.args.values()) and key not in args:
            continue
        if f"{parent}/{key}" in SKIPPED or key in APART:
            continue
        if isinstance(named, GraphQLInterfaceType):  # every field of every type that implements it
            kinds = schema.graphql_schema.get_possible_types(named)
            types: dict[str, set[str]] = {}
            for k in kinds:
                for n, f in k.fields.items():
                    types.setdefault(n, set()).add(str(f.type))
            clash = frozenset(n for n, t in types.items() if len(t) > 1)
            inner = " ".join(
                f"... on {k.name} {{ {_selection(k, args, depth + 1, key, clash)} }}" for k in kinds
            )
            parts.append(f"{label}{call} {{ {inner} }}")
        elif not isinstance(named, GraphQLObjectType):  # scalars and enums
            parts.append(label + call)
        elif depth < 8:
            parts.append(f"{label}{call} {{ {_selection(named, args, depth + 1, key)} }}")
    return " ".join(parts)


# Finished hands' records are public (the crawl scrubs them) and are crawled through `hand`.
SKIPPED = {"Table.hands/Hand.moves", "Table.hands/Hand.record", "EventsPage.events/HandRevealedEvent.record"}
# Fields asked apart, wherever they are (a hint answers only the seat to act: the crawl asks it alone).
APART = {"Table.hint", "Hand.review"}  # a review: of finished hands only, asked apart below


def everything_queries(table_id: int, hand: int, after: int) -> list[str]:
    """Queries of every field path from the root (the mutation root aside), the table in one and
    the rest in another (in one, they would be over the cost limit); the move log and events from
    `after` on, as a polling client asks for them."""
    root = schema.graphql_schema.query_type
    assert root is not None
    args = {
        "Query.table": f"id: {table_id}",
        "Table.hand": f"number: {hand}",
        "Query.tables": "first: 1",
        "Table.moves": f"after: {after}, first: 50",
        "Table.events": f"after: {after}, first: 50",
    }
    return [
        "{ " + _selection(root, args, only=frozenset(part)) + " }" for part in (["table"], ["me", "tables"])
    ]


def scrub(value: Any, hand: int) -> Any:
    """Drop what is public by then: options (they name the Omnibus card), finished hands' records
    and moves and events of earlier hands."""
    if isinstance(value, list):
        return [scrub(v, hand) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("finished") is True or ("seq" in value and value.get("hand", hand) < hand):
        return None
    return {k: scrub(v, hand) for k, v in value.items() if k != "options"}


REVIEW = (
    "{ table(id: %d) { hand(number: %d) { review(seat: %d, level: basic) { tableId hand seat level "
    "pass { cards botCards pointsLost } tricks { trick card botCard pointsLost } totalPointsLost } } } }"
)


def graphql_reviews(table_id: int, hand: int, seat: int, token: str, players: int, secrets: Secrets) -> int:
    """A seat's review of a finished hand while the game goes on: its own seat's names only cards it
    held in that hand; another seat's is refused (`not_your_seat`), the refusal crawled too."""
    record = client(token).get(f"/api/v1/tables/{table_id}/hands/{hand}").json()["record"]
    own = gql(REVIEW % (table_id, hand, seat), token)
    assert "errors" not in own, own
    answer = own["data"]["table"]["hand"]["review"]
    assert answer["seat"] == seat and set(TOKEN.findall(json.dumps(answer))) <= own_cards(record, seat)
    other = gql(REVIEW % (table_id, hand, (seat + 1) % players), token)
    assert [(e["extensions"]["code"], e["extensions"]["reason"]) for e in other["errors"]] == [
        ("review_not_allowed", "not_your_seat")
    ]
    secrets.check(other, seat)
    return 1


@pytest.mark.parametrize(("players", "variant"), [(4, "classic"), (6, "cancellation")])
def test_whole_game_over_graphql_never_shows_any_field_with_another_seats_cards(
    players: int, variant: str
) -> None:
    rng = random.Random(players)
    tokens = [guest(f"p{i}") for i in range(players)]
    table_id = ok(
        "mutation($o: TableOptionsInput) { createTable(options: $o, hints: true) { table { id } errors { code } } }",
        tokens[0],
        o={"players": players, "variant": variant, "targetScore": 50},
    )["table"]["id"]
    hint = (
        "{ table(id: %d) { hint(level: basic) { tableId version hand seat level phase thinkMs "
        "choice { type card cards choice } options { action { type card cards choice } points } } } }"
    ) % table_id
    seats = {}
    for token in tokens:
        joined = ok(
            "mutation($t: Int!) { joinTable(tableId: $t) { table { yourSeat } errors { code } } }",
            token,
            t=table_id,
        )
        seats[joined["table"]["yourSeat"]] = token
    crawls = hinted = reviewed = 0
    seen = dict.fromkeys(seats, 0)
    last_phase: tuple[int, str] | None = None
    while True:
        table = Table.objects.get(pk=table_id)
        if table.status == Table.Status.FINISHED:
            break
        secrets = Secrets(table_id)
        # Every seat crawls everything when a phase changes; at the start of each trick, one seat
        # in turn does (its moves and events since its last crawl, so nothing goes unchecked).
        state = table.state
        phase = (table.hand_number, state["phase"])
        if not state["trick"] or phase != last_phase:
            crawlers = seats if phase != last_phase else [len(state["tricks"]) % players]
            last_phase = phase
            for seat in crawlers:
                token = seats[seat]
                for query in everything_queries(table_id, table.hand_number, seen[seat]):
                    body = gql(query, token)
                    assert "errors" not in body, body["errors"][:3]
                    secrets.check(scrub(body, table.hand_number), seat)
                    if "table" in body["data"]:
                        version = body["data"]["table"]["events"]["version"]
                # The hint (the table allows them): the seat to act gets one, the others are refused.
                asked = gql(hint, token)
                codes = [e["extensions"]["code"] for e in asked.get("errors", [])]
                assert codes in ([], ["not_your_turn"]), asked
                hinted += not codes
                secrets.check(asked, seat)
                # The review of the last finished hand: its own seat's only, naming its own cards.
                if table.hand_number > 1:
                    reviewed += graphql_reviews(
                        table_id, table.hand_number - 1, seat, token, players, secrets
                    )
                seen[seat] = version
                crawls += 1
        seat = rng.choice(
            gql("{ table(id: %d) { game { toAct } } }" % table_id, tokens[0])["data"]["table"]["game"][
                "toAct"
            ]
        )
        mine = gql(
            "{ table(id: %d) { version game { legalActions { type from cards choices } } } }" % table_id,
            seats[seat],
        )["data"]["table"]
        legal = mine["game"]["legalActions"]
        if legal["type"] == "pass":
            doc = "mutation($t: Int!, $c: [String!]!, $v: Int) { passCards(tableId: $t, cards: $c, expectedVersion: $v)"
            variables = {"c": rng.sample(legal["from"], 3)}
        elif legal["type"] == "moon":
            doc = "mutation($t: Int!, $c: String!, $v: Int) { chooseMoon(tableId: $t, choice: $c, expectedVersion: $v)"
            variables = {"c": rng.choice(legal["choices"])}
        else:
            doc = "mutation($t: Int!, $c: String!, $v: Int) { playCard(tableId: $t, card: $c, expectedVersion: $v)"
            variables = {"c": rng.choice(legal["cards"])}
        answer = ok(
            doc + " { table { version game { hand trick { card } } } errors { code } } }",
            seats[seat],
            t=table_id,
            v=mine["version"],
            **variables,
        )
        Secrets(table_id).check(scrub(answer, Table.objects.get(pk=table_id).hand_number), seat)
    assert crawls > 20 and hinted > 5 and reviewed > 2
    for token in seats.values():  # after the game: every seat, for every reader
        for target in range(players):
            body = gql(REVIEW % (table_id, table.hand_number, target), token)
            assert "errors" not in body, body
            record = (
                client(token).get(f"/api/v1/tables/{table_id}/hands/{table.hand_number}").json()["record"]
            )
            answer = body["data"]["table"]["hand"]["review"]
            named = set(TOKEN.findall(json.dumps(answer)))
            assert answer["seat"] == target and named <= own_cards(record, target)
    final = ok(
        "{ table(id: %d) { status game { winners scores } scoresheet { totals } } }" % table_id, tokens[0]
    )
    assert final["table"]["status"] == "finished" and final["table"]["game"]["winners"]
    assert final["table"]["scoresheet"][-1]["totals"] == final["table"]["game"]["scores"]


# -- mutations: success and every error code --------------------------------------------------

TABLE_FIELDS = "table { id version status yourSeat seats { position bot player } } errors { code message field } replayed"


def mutate(name: str, args: str, token: str | None, **variables: Any) -> dict[str, Any]:
    decl = ", ".join(f"${k}: {t}" for k, t in _VARIABLE_TYPES.items() if k in variables)
    doc = f"mutation{'(' + decl + ')' if decl else ''} {{ {name}{'(' + args + ')' if args else ''} {{ {TABLE_FIELDS} }} }}"
    body = gql(doc, token, **variables)
    assert "errors" not in body, body
    return body["data"][name]


_VARIABLE_TYPES = {"o": "TableOptionsInput", "c": "ClocksInput", "cards": "[String!]!", "card": "String!"}


def code_of(payload: dict[str, Any]) -> str | None:
    return payload["errors"][0]["code"] if payload["errors"] else None


def _four_seated() -> tuple[int, dict[int, str], str]:
    """An app's started four-seat table: id, tokens by seat, the app key."""
    _, key = app_create(name="gq")
    tokens = [
        ok('mutation { createPlayer(name: "p%d") { token errors { code } } }' % i, key)["token"]
        for i in range(4)
    ]
    table = mutate("createTable", "", key)["table"]["id"]
    seats = {mutate("joinTable", f"tableId: {table}", t)["table"]["yourSeat"]: t for t in tokens}
    return table, seats, key


def test_table_mutations_succeed_and_refuse_with_the_rest_codes() -> None:
    _, key = app_create(name="app")
    alice = ok(
        'mutation { createPlayer(name: "alice", externalId: "u1") { token player { id } errors { code } } }',
        key,
    )
    bob = ok('mutation { createPlayer(name: "bob") { token errors { code } } }', key)["token"]
    t = mutate("createTable", "options: $o, clocks: $c", key, o={"players": 3}, c={"play": 20})["table"]
    assert t["status"] == "open" and t["version"] == 0
    tid = t["id"]
    # join: success, then every refusal
    assert mutate("joinTable", f"tableId: {tid}, position: 1", alice["token"])["table"]["yourSeat"] == 1
    assert code_of(mutate("joinTable", f"tableId: {tid}", alice["token"])) == "already_seated"
    assert code_of(mutate("joinTable", f"tableId: {tid}, position: 1", bob)) == "seat_taken"
    assert code_of(mutate("joinTable", f"tableId: {tid}, position: 7", bob)) == "invalid_seat"
    assert code_of(mutate("joinTable", f"tableId: {tid}, expectedVersion: 0", bob)) == "stale_version"
    assert code_of(mutate("joinTable", f"tableId: {tid + 99}", bob)) == "not_found"
    assert code_of(mutate("joinTable", f"tableId: {tid}", key)) == "player_token_required"
    assert code_of(mutate("joinTable", f"tableId: {tid}", None)) == "not_authenticated"
    # leave
    assert code_of(mutate("leaveTable", f"tableId: {tid}", bob)) == "not_seated"
    assert mutate("leaveTable", f"tableId: {tid}", alice["token"])["table"]["yourSeat"] is None
    # add bot
    assert code_of(mutate("addBot", f'tableId: {tid}, level: "grandmaster"', key)) == "invalid_bot_level"
    assert (
        mutate("addBot", f'tableId: {tid}, level: "strong", position: 0', key)["table"]["seats"][0]["bot"]
        == "strong"
    )
    assert code_of(mutate("addBot", f"tableId: {tid}, position: 0", key)) == "seat_taken"
    # start: an unseated player may not; a seated one fills the rest with bots
    assert code_of(mutate("startTable", f"tableId: {tid}", bob)) == "not_seated"
    mutate("joinTable", f"tableId: {tid}", bob)
    assert code_of(mutate("startTable", f'tableId: {tid}, fillWith: "nobody"', bob)) == "invalid_bot_level"
    started = mutate("startTable", f'tableId: {tid}, fillWith: "basic"', bob)["table"]
    assert started["status"] == "passing"
    for again in ("startTable", "joinTable", "leaveTable", "addBot"):
        token = key if again == "addBot" else (bob if again != "joinTable" else alice["token"])
        assert code_of(mutate(again, f"tableId: {tid}", token)) in ("table_not_open", "table_full"), again
    # abandon
    assert code_of(mutate("abandonTable", f"tableId: {tid}", bob)) == "app_key_required"
    assert mutate("abandonTable", f"tableId: {tid}", key)["table"]["status"] == "abandoned"
    assert code_of(mutate("abandonTable", f"tableId: {tid}", key)) == "table_closed"
    # create: every refusal
    for args, variables, code in [
        ("options: $o", {"o": {"players": 2}}, "invalid_option"),
        ("clocks: $c", {"c": {"play": 1}}, "invalid_clock"),
        ('bots: [{position: 0, level: "x"}]', {}, "invalid_bot_level"),
        ('bots: [{position: 5, level: "basic"}]', {}, "invalid_seat"),
        ('idempotencyKey: ""', {}, "invalid_idempotency_key"),
    ]:
        assert code_of(mutate("createTable", args, key, **variables)) == code, args
    assert code_of(mutate("createTable", "", None)) == "not_authenticated"


def test_action_mutations_succeed_and_refuse_with_the_engine_codes() -> None:
    tid, seats, key = _four_seated()
    hand = ok("{ table(id: %d) { game { hand } } }" % tid, seats[0])["table"]["game"]["hand"]
    for name, args, variables, code in [
        ("playCard", "card: $card", {"card": "2C"}, "wrong_phase"),
        ("playCard", "card: $card", {"card": "ZZ"}, "invalid_card"),
        ("passCards", "cards: $cards", {"cards": hand[:2]}, "bad_pass"),
        ("chooseMoon", 'choice: "maybe"', {}, "invalid_input"),  # as REST: the input's choices
        ("chooseMoon", 'choice: "add"', {}, "wrong_phase"),
        ("passCards", "cards: $cards, expectedVersion: 1", {"cards": hand[:3]}, "stale_version"),
    ]:
        got = mutate(name, f"tableId: {tid}, {args}", seats[0], **variables)
        assert code_of(got) == code, (name, args, got)
    assert (
        code_of(mutate("passCards", f"tableId: {tid}, cards: $cards", key, cards=hand[:3]))
        == "player_token_required"
    )
    outsider = ok('mutation { createPlayer(name: "o") { token errors { code } } }', key)["token"]
    assert (
        code_of(mutate("passCards", f"tableId: {tid}, cards: $cards", outsider, cards=hand[:3]))
        == "not_seated"
    )
    # success, and the idempotent repeat answers exactly what the first saw
    first = mutate(
        "passCards", f'tableId: {tid}, cards: $cards, idempotencyKey: "p1"', seats[0], cards=hand[:3]
    )
    again = mutate(
        "passCards", f'tableId: {tid}, cards: $cards, idempotencyKey: "p1"', seats[0], cards=hand[:3]
    )
    assert (first["replayed"], again["replayed"]) == (False, True)
    assert {k: v for k, v in first.items() if k != "replayed"} == {
        k: v for k, v in again.items() if k != "replayed"
    }
    other = mutate(
        "passCards", f'tableId: {tid}, cards: $cards, idempotencyKey: "p1"', seats[0], cards=hand[3:6]
    )
    assert code_of(other) == "idempotency_key_reused"
    assert Move.objects.filter(table_id=tid, kind="pass").count() == 1
    assert (
        code_of(mutate("passCards", f"tableId: {tid}, cards: $cards", seats[0], cards=hand[3:6]))
        == "bad_pass"
    )
    for seat in (1, 2, 3):
        cards = ok("{ table(id: %d) { game { hand } } }" % tid, seats[seat])["table"]["game"]["hand"][:3]
        mutate("passCards", f"tableId: {tid}, cards: $cards", seats[seat], cards=cards)
    game = ok("{ table(id: %d) { game { turn legalActions { cards } } } }" % tid, seats[0])["table"]["game"]
    waiting = next(s for s in seats if s != game["turn"])
    assert (
        code_of(mutate("playCard", f"tableId: {tid}, card: $card", seats[waiting], card="2C"))
        == "not_your_turn"
    )
    leader = seats[game["turn"]]
    lead = ok("{ table(id: %d) { game { legalActions { cards } hand } } }" % tid, leader)["table"]["game"]
    wrong = next(c for c in lead["hand"] if c not in lead["legalActions"]["cards"])
    assert (
        code_of(mutate("playCard", f"tableId: {tid}, card: $card", leader, card=wrong))
        == "must_lead_lowest_club"
    )
    played = mutate("playCard", f"tableId: {tid}, card: $card", leader, card="2C")
    assert played["errors"] == [] and played["table"]["version"] > first["table"]["version"]


def test_not_started_and_credential_mutations() -> None:
    _, key = app_create(name="creds")
    player = ok('mutation { createPlayer(name: "pat") { token player { id } errors { code } } }', key)
    t = mutate("createTable", "", key)["table"]["id"]
    mutate("joinTable", f"tableId: {t}", player["token"])
    assert (
        code_of(mutate("playCard", f"tableId: {t}, card: $card", player["token"], card="2C")) == "not_started"
    )
    new = ok(
        "mutation($p: Int!) { issueToken(playerId: $p) { token errors { code } } }",
        key,
        p=player["player"]["id"],
    )
    assert ok("{ me { kind player { name } } }", new["token"])["me"] == {
        "kind": "player",
        "player": {"name": "pat"},
    }
    refused = gql("mutation { issueToken(playerId: 999999) { token errors { code } } }", key)["data"][
        "issueToken"
    ]
    assert code_of(refused) == "not_found"
    refused = gql('mutation { createPlayer(name: "x") { token errors { code } } }', player["token"])
    assert code_of(refused["data"]["createPlayer"]) == "app_key_required"
    refused = gql('mutation { createPlayer(name: "%s") { token errors { code field } } }' % ("x" * 65), key)
    assert refused["data"]["createPlayer"]["errors"] == [{"code": "invalid_input", "field": "name"}]
    assert (
        code_of(gql("mutation { revokeToken { errors { code } } }", key)["data"]["revokeToken"])
        == "not_a_player_token"
    )
    refused = gql(
        "mutation { issueToken(playerId: %d) { token errors { code } } }" % player["player"]["id"],
        new["token"],
    )
    assert code_of(refused["data"]["issueToken"]) == "app_key_required"
    refused = gql('mutation { createPlayer(name: "x") { token errors { code } } }')["data"]["createPlayer"]
    assert code_of(refused) == "not_authenticated"
    first = mutate("createTable", 'idempotencyKey: "t"', key)
    assert mutate("createTable", 'idempotencyKey: "t"', key) == {**first, "replayed": True}
    assert (
        code_of(mutate("createTable", 'options: $o, idempotencyKey: "t"', key, o={"players": 5}))
        == "idempotency_key_reused"
    )
    assert ok("mutation { revokeToken { errors { code } } }", new["token"])["errors"] == []
    assert (
        gql("{ me { kind } }", new["token"], status=401)["errors"][0]["extensions"]["code"]
        == "authentication_failed"
    )
    assert (
        code_of(gql('mutation { createGuest(name: "") { errors { code } } }')["data"]["createGuest"])
        == "invalid_input"
    )


def test_another_apps_table_does_not_resolve() -> None:
    tid, _, _ = _four_seated()
    _, other = app_create(name="other")
    assert ok("{ table(id: %d) { id } }" % tid, other) == {"table": None}
    assert ok("{ tables { edges { node { id } } } }", other)["tables"]["edges"] == []
    assert code_of(mutate("abandonTable", f"tableId: {tid}", other)) == "not_found"
    stranger = guest()
    assert ok("{ table(id: %d) { id } }" % tid, stranger) == {"table": None}


def test_tables_connection_pages_and_filters_like_rest() -> None:
    _, key = app_create(name="pages")
    ids = [mutate("createTable", "", key)["table"]["id"] for _ in range(7)]
    seen, after = [], None
    while True:
        page = ok(
            "query($a: String) { tables(first: 3, after: $a) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }",
            key,
            a=after,
        )["tables"]
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == sorted(ids, reverse=True)
    mutate("startTable", f"tableId: {ids[2]}", key)
    passing = ok('{ tables(status: "passing") { edges { node { id } } } }', key)["tables"]["edges"]
    assert [e["node"]["id"] for e in passing] == [ids[2]]
    body = gql('{ tables(status: "nope") { edges { cursor } } }', key)
    assert body["errors"][0]["extensions"]["code"] == "invalid_filter"
    body = gql('{ tables(after: "garbage") { edges { cursor } } }', key)
    assert body["errors"][0]["extensions"]["code"] == "invalid_cursor"


def test_listing_fifty_tables_with_seats_and_scoresheets_costs_a_fixed_number_of_queries() -> None:
    _, key = app_create(name="n+1")
    query = "{ tables(first: %d) { edges { node { id seats { name bot } scoresheet { totals } game { scores } } } } }"

    def count(n: int) -> int:
        with CaptureQueriesContext(connection) as captured:
            data = ok(query % n, key)
        assert len(data["tables"]["edges"]) == n
        return len(captured)

    for _ in range(50):
        mutate(
            "createTable",
            'bots: [{position: 0, level: "basic"}, {position: 1, level: "basic"}, {position: 2, level: "basic"}, {position: 3, level: "basic"}]',
            key,
        )
    small, large = count(5), count(50)
    assert small == large <= 3


def test_depth_and_cost_limits_answer_with_a_clear_error() -> None:
    token = guest()
    deep = "{ me { player { name } } " + "tables { edges { node { game { tricks { cards { card } } } } } } }"
    assert "errors" not in gql(deep, token)
    fragment_bomb = (
        "fragment T on Table { moves { seq } events { events { seq } } hands { moves { seq } } } "
        "{ tables(first: 100) { edges { node { ...T } } } a: tables(first: 100) { edges { node { ...T } } } }"
    )
    body = gql(fragment_bomb, token, status=400)
    assert body["errors"][0]["extensions"]["code"] == "query_too_complex" and "data" not in body
    body = gql("{ me { " * 12 + "kind" + " }" * 12, token, status=400)
    assert body["errors"][0]["extensions"]["code"] in ("query_too_deep", "invalid_query")
    # Introspection is bounded apart: the standard query of every client passes (its type
    # references nest 8 deep), but lists of types and fields nested in each other are refused.
    introspection = "{ __schema { types { fields { type { %s name %s } } } } }"
    assert "errors" not in gql(introspection % ("ofType { " * 8, "} " * 8), token)
    assert "errors" not in gql(get_introspection_query(), token)
    bomb = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }"
    body = gql(bomb, token, status=400)
    assert body["errors"][0]["extensions"]["code"] == "query_too_complex"


def test_choose_moon_succeeds_for_the_shooter_only() -> None:
    """A deal where seat 0 holds every club leads clubs to the end and takes every point."""
    tid, seats, _ = _four_seated()
    suits = {s: [f"{r}{s}" for r in "23456789TJQKA"] for s in "CDSH"}
    hands = [
        suits["C"],
        suits["D"][:6] + suits["S"][:7],
        suits["D"][6:] + suits["H"][:6],
        suits["S"][7:] + suits["H"][6:],
    ]
    state = State.from_deal(Options.from_dict({"players": 4}), hands, hand_number=4, seed="s")
    rng = random.Random(1)
    while state.phase == "playing":
        state.push(state.turn, rng.choice(state.legal_actions(state.turn)))
    assert state.phase == "moon_choice" and state.shooter == 0
    Table.objects.filter(pk=tid).update(state=state_to_dict(state), status="moon_choice", hand_number=4)
    refused = mutate("chooseMoon", f'tableId: {tid}, choice: "add"', seats[1])
    assert code_of(refused) == "not_your_turn", refused
    chosen = ok(
        'mutation { chooseMoon(tableId: %d, choice: "add") { table { game { scores phase } } errors { code } } }'
        % tid,
        seats[0],
    )
    assert chosen["table"]["game"]["scores"] == [0, 26, 26, 26]


def test_text_that_the_database_cannot_store_is_refused_and_null_optional_text_is_empty() -> None:
    """NUL and lone surrogates are refused before anything is stored (PostgreSQL cannot store
    them: a 500 before), in both APIs; an explicit null externalId means none."""
    for name in ("a\u0000b", "\ud800"):
        body = gql("mutation($n: String!) { createGuest(name: $n) { token errors { code field } } }", n=name)
        assert body["data"]["createGuest"] == {
            "token": None,
            "errors": [{"code": "invalid_input", "field": "name"}],
        }
    _, key = app_create(name="texts")
    made = ok('mutation { createPlayer(name: "x", externalId: null) { token errors { code } } }', key)
    assert made["token"]
    refused = gql(
        'mutation { createPlayer(name: "x", externalId: "\\u0000") { errors { code field } } }', key
    )
    assert refused["data"]["createPlayer"]["errors"] == [{"code": "invalid_input", "field": "externalId"}]
    r = Client().post("/api/v1/guests", {"name": "a\u0000b"}, content_type="application/json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_input" and "name" in r.json()["fields"]
