"""The Python SDK (clients/python) against live servers: whole games with the sync client and the
Bot helper, a hand with the async client, a stream resumed after its connection is cut, retries
of 429 and of lobby writes, and its models and version against the API's own description."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast, get_args, get_type_hints

import httpx
import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator
from hearts_client import (
    EVENT_TYPES,
    AsyncHeartsClient,
    Bot,
    Event,
    Game,
    HeartsClient,
    HeartsError,
    LegalActions,
    NotFound,
    QuotaExceeded,
    RateLimited,
    Retry,
    RulesError,
    ServerError,
    ServiceUnavailable,
    StaleVersion,
    Table,
    __version__,
)
from hearts_client import models as sdk_models
from httpx_sse import connect_sse

from bots import tournament
from games.accounts import app_create
from games.models import Move
from games.models import Table as TableRow
from tests.bots.test_bot_client import Proxy

ROOT = Path(__file__).resolve().parents[2]
RANKS = "23456789TJQKA"
NO_CLOCKS = {"pass": None, "play": None, "moon": None}


def _rank(card: str) -> int:
    return RANKS.index(card[:-1].replace("10", "T"))


class Lowest(Bot):
    """Pass the three highest cards, play the lowest legal one."""

    def choose_pass(self, view: Game, legal: LegalActions) -> list[str]:
        return sorted(legal["from"], key=_rank)[-legal["count"] :]

    def choose_play(self, view: Game, legal: LegalActions) -> str:
        return min(legal["cards"], key=_rank)


# -- what needs no server ---------------------------------------------------------------------


def _openapi() -> dict[str, Any]:
    return dict(SchemaGenerator().get_schema(request=None, public=True))


def test_version_is_the_api_version() -> None:
    """The SDK's version is the API's: the OpenAPI info.version, the package's metadata and
    `hearts_client.__version__` (docs/clients.md, "Versions"; tests/e2e/test_sdk_typescript.py: its own)."""
    api = settings.SPECTACULAR_SETTINGS["VERSION"]
    python = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]["version"]
    assert api == _openapi()["info"]["version"] == __version__ == python


def _keys(typed: type[Any]) -> tuple[set[str], set[str]]:
    return set(typed.__required_keys__), set(typed.__optional_keys__)


def test_models_have_the_fields_of_the_openapi_document() -> None:
    """Each event TypedDict has exactly the fields of its `Event_<type>` schema (required ones
    required), the table's models those of TableOut, SeatOut, GameOut, LegalOut..., and ErrorCode
    the document's codes."""
    components = _openapi()["components"]["schemas"]
    assert list(get_args(sdk_models.ErrorCode)) == components["ErrorCode"]["enum"]
    for literal, enum in [
        (sdk_models.TableStatus, "TableStatusEnum"),
        (sdk_models.Phase, "PhaseEnum"),
        (sdk_models.BotLevel, "BotLevelEnum"),
        (sdk_models.MoonChoice, "MoonChoiceEnum"),
        (sdk_models.PassDirection, "PassDirectionEnum"),
        (sdk_models.TournamentStatus, "TournamentStatusEnum"),
    ]:
        assert list(get_args(literal)) == components[enum]["enum"], enum
    documented = {name.removeprefix("Event_") for name in components if name.startswith("Event_")}
    assert documented == set(EVENT_TYPES)
    for kind, typed in EVENT_TYPES.items():
        schema = components[f"Event_{kind}"]
        required, optional = _keys(typed)
        assert required == set(schema["required"]), kind
        assert required | optional == set(schema["properties"]), kind
        literal = get_type_hints(typed)["type"]
        assert literal.__args__ == tuple(schema["properties"]["type"]["enum"]), kind
    for typed, name in [
        (sdk_models.PassAction, "PassActionRequest"),
        (sdk_models.PlayAction, "PlayActionRequest"),
        (sdk_models.MoonAction, "MoonActionRequest"),
    ]:
        schema = components[name]  # an action's body, less the expected_version the SDK sends as If-Match
        required, optional = _keys(typed)
        assert required == set(schema["required"]) and not optional, name
        assert required == set(schema["properties"]) - {"expected_version"}, name
    for typed, name in [
        (sdk_models.Table, "TableOut"),
        (sdk_models.Seat, "SeatOut"),
        (sdk_models.Game, "GameOut"),
        (sdk_models.LegalActions, "LegalOut"),
        (sdk_models.Clocks, "ClocksOut"),
        (sdk_models.Player, "PlayerOut"),
        (sdk_models.Scoresheet, "ScoresheetOut"),
        (sdk_models.CardAt, "CardAt"),
        (sdk_models.Trick, "TrickOut"),
        (sdk_models.SheetRow, "SheetRowOut"),
        (sdk_models.MyPass, "PassOut"),
        (sdk_models.Received, "ReceivedOut"),
        (sdk_models.TableRow, "TableRowOut"),
        (sdk_models.TablePage, "TablePageOut"),
        (sdk_models.PlayerToken, "PlayerTokenOut"),
        (sdk_models.Me, "MeOut"),
        (sdk_models.MyTable, "MyTableOut"),
        (sdk_models.MyTurns, "TurnsOut"),
        (sdk_models.Turn, "TurnOut"),
        (sdk_models.App, "AppOut"),
        (sdk_models.StreamTicket, "StreamTicketOut"),
        (sdk_models.GameExport, "GameExportOut"),
        (sdk_models.RatingSystem, "RatingSystemOut"),
        (sdk_models.RatingFamily, "FamilyOut"),
        (sdk_models.BotRating, "BotRatingOut"),
        (sdk_models.Rating, "RatingOut"),
        (sdk_models.PlayerRatings, "PlayerRatingsOut"),
        (sdk_models.LeaderboardPage, "LeaderboardPageOut"),
        (sdk_models.RatingChange, "RatingChangeOut"),
        (sdk_models.MuSigma, "MuSigmaOut"),
        (sdk_models.RatingHistoryPage, "RatingHistoryPageOut"),
        (sdk_models.Tournament, "TournamentOut"),
        (sdk_models.Entrant, "EntrantOut"),
        (sdk_models.Standings, "StandingsOut"),
        (sdk_models.Standing, "StandingOut"),
        (sdk_models.TournamentTableRow, "TournamentTableOut"),
        (sdk_models.Webhook, "WebhookOut"),
        (sdk_models.WebhookWithSecret, "WebhookSecretOut"),
        (sdk_models.Delivery, "DeliveryOut"),
        (sdk_models.DeliveryDetail, "DeliveryDetailOut"),
        (sdk_models.DeliveryPage, "DeliveryPageOut"),
        (sdk_models.Hand, "HandOut"),
        (sdk_models.HandReplay, "HandReplayOut"),
        (sdk_models.Token, "TokenOut"),
        (sdk_models.ApiKey, "ApiKeyOut"),
        (sdk_models.ApiKeyWithSecret, "ApiKeySecretOut"),
        (sdk_models.RotatedApiKey, "RotatedKeyOut"),
        (sdk_models.ApiKeyPage, "ApiKeyPageOut"),
    ]:
        schema = components[name]
        required, optional = _keys(typed)
        assert required == set(schema.get("required", [])), name
        assert required | optional == set(schema["properties"]), name


@pytest.mark.slow
def test_package_and_example_are_mypy_strict_clean() -> None:
    """`mypy --strict` on the SDK and on the example bot (outside the project's mypy settings: the
    SDK depends on nothing of the server)."""
    cmd = [sys.executable, "-m", "mypy", "--config-file=", "--strict", "--no-incremental"]
    result = subprocess.run(
        [*cmd, "clients/python/hearts_client", "examples/bot_client.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- the retry rules, on a scripted transport ----------------------------------------------------


def _scripted(*answers: httpx.Response | Exception) -> tuple[list[httpx.Request], httpx.MockTransport]:
    """A transport answering each request with the next of `answers` (an exception is raised)."""
    sent: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return sent, httpx.MockTransport(handle)


TABLE = {"id": 7, "status": "playing", "version": 12}
FAST = Retry(attempts=3, backoff=0.0)


def _client(transport: httpx.MockTransport) -> HeartsClient:
    return HeartsClient(
        "http://hearts.test", "hk_player_x", retry=FAST, http=httpx.Client(transport=transport)
    )


def test_a_lost_answer_and_a_503_are_retried_with_the_same_key() -> None:
    sent, transport = _scripted(
        httpx.ReadError("connection reset"),
        httpx.Response(
            503, json={"code": "service_unavailable", "detail": "db"}, headers={"Retry-After": "0"}
        ),
        httpx.Response(200, json=TABLE),
    )
    assert _client(transport).tables.play(7, "QS", version=12) == TABLE
    assert len(sent) == 3
    assert len({r.headers["Idempotency-Key"] for r in sent}) == 1
    assert {r.headers["If-Match"] for r in sent} == {"12"}
    assert sent[0].url == "http://hearts.test/api/v1/tables/7/actions"
    assert json.loads(sent[0].content) == {"type": "play", "card": "QS"}


def test_attempts_are_bounded_and_a_long_retry_after_is_not_waited_for() -> None:
    unavailable = httpx.Response(503, json={"code": "service_unavailable", "detail": "db"})
    sent, transport = _scripted(unavailable, unavailable, unavailable, unavailable)
    with pytest.raises(ServiceUnavailable) as raised:
        _client(transport).tables.get(7)
    assert len(sent) == FAST.attempts and raised.value.code == "service_unavailable"

    limited = httpx.Response(
        429, json={"code": "rate_limited", "detail": "slow down"}, headers={"Retry-After": "3600"}
    )
    sent, transport = _scripted(limited)
    with pytest.raises(RateLimited) as too_long:
        _client(transport).tables.get(7)
    assert len(sent) == 1 and too_long.value.retry_after == 3600


def test_a_full_quota_is_raised_at_once_not_retried_as_a_rate_limit_is() -> None:
    full = httpx.Response(
        429, json={"code": "quota_exceeded", "detail": "full", "quota": "open_tables", "limit": 3}
    )
    sent, transport = _scripted(full)
    with pytest.raises(QuotaExceeded) as raised:
        _client(transport).tables.create(bots={1: "basic"})
    assert len(sent) == 1 and raised.value.body["quota"] == "open_tables" and raised.value.body["limit"] == 3


def test_stale_versions_retry_lobby_writes_only_and_errors_keep_their_code() -> None:
    stale = httpx.Response(409, json={"code": "stale_version", "detail": "moved on", "version": 14})
    sent, transport = _scripted(stale, httpx.Response(200, json=TABLE))
    _client(transport).tables.join(7, 2, version=12)
    assert [r.headers["If-Match"] for r in sent] == ["12", "14"]
    assert sent[0].headers["Idempotency-Key"] == sent[1].headers["Idempotency-Key"]

    sent, transport = _scripted(stale)
    with pytest.raises(StaleVersion) as raised:
        _client(transport).tables.play(7, "QS", version=12)
    assert len(sent) == 1 and raised.value.version == 14 and raised.value.status == 409

    refused = httpx.Response(422, json={"code": "must_follow_suit", "detail": "follow", "suit": "H"})
    sent, transport = _scripted(refused)
    with pytest.raises(RulesError) as rules:
        _client(transport).tables.play(7, "QS")
    assert rules.value.code == "must_follow_suit" and rules.value.body["suit"] == "H"
    assert isinstance(rules.value, HeartsError) and len(sent) == 1

    proxy_page = httpx.Response(502, text="<html>bad gateway</html>")  # not the API answering
    sent, transport = _scripted(proxy_page, proxy_page, proxy_page)
    with pytest.raises(ServerError) as server:
        _client(transport).tables.get(7)
    assert server.value.code == "http_502" and len(sent) == FAST.attempts


def test_create_table_sends_the_bots_thinking_time_and_pace_only_when_given() -> None:
    sent, transport = _scripted(httpx.Response(201, json=TABLE), httpx.Response(201, json=TABLE))
    client = _client(transport)
    client.tables.create(bots={1: "expert"}, bot_think_ms=500, bot_pace_ms=0)
    client.tables.create(bots={1: "basic"})
    assert json.loads(sent[0].content) == {
        "options": {},
        "bots": {"1": "expert"},
        "clocks": {},
        "bot_think_ms": 500,
        "bot_pace_ms": 0,
    }
    assert json.loads(sent[1].content) == {"options": {}, "bots": {"1": "basic"}, "clocks": {}}


def test_a_conditional_read_answers_none_while_the_table_is_unchanged() -> None:
    sent, transport = _scripted(httpx.Response(304), httpx.Response(200, json=TABLE))
    client = _client(transport)
    assert client.tables.get_if_changed(7, 12) is None
    assert client.tables.get_if_changed(7, 12) == TABLE
    assert [r.headers["If-None-Match"] for r in sent] == ['W/"12"'] * 2


def test_the_async_client_retries_alike() -> None:
    sent, transport = _scripted(
        httpx.ConnectError("refused"),
        httpx.Response(429, json={"code": "rate_limited", "detail": "x"}, headers={"Retry-After": "0"}),
        httpx.Response(201, json=TABLE),
    )

    async def create() -> Table:
        http = httpx.AsyncClient(transport=transport)
        async with AsyncHeartsClient("http://hearts.test", "t", retry=FAST, http=http) as client:
            table = await client.tables.create(bots={1: "basic"}, idempotency_key="mine-1")
        await http.aclose()
        return table

    assert asyncio.run(create()) == TABLE
    assert [r.headers["Idempotency-Key"] for r in sent] == ["mine-1"] * 3


# -- live servers -----------------------------------------------------------------------------


def _counting(log: list[httpx.Request | httpx.Response]) -> httpx.Client:
    """An httpx client that records every request and answer (the SDK accepts one)."""
    return httpx.Client(timeout=30, event_hooks={"request": [log.append], "response": [log.append]})


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_sync_client_plays_a_whole_game(web: Callable[..., str], workers: Callable[..., object]) -> None:
    """A person plays a whole game against three bots with the sync client alone: the table's
    stream, an action on each `your_turn` at its version, every write with an Idempotency-Key."""
    workers()
    base = web()
    seen: list[httpx.Request | httpx.Response] = []
    client = HeartsClient.as_guest(base, "sync", http=_counting(seen))
    table = client.tables.create(
        options={"target_score": 50}, bots={1: "random", 2: "random", 3: "random"}, clocks=NO_CLOCKS
    )
    table = client.tables.join(table["id"], version=table["version"])
    assert table["status"] == "passing" and table["your_seat"] == 0
    events: list[Event] = []
    stream = client.streams.table(table["id"])
    deadline = time.monotonic() + 240
    for event in stream:
        assert time.monotonic() < deadline, "the game did not finish"
        events.append(event)
        if event["type"] == "your_turn":
            legal = event["legal_actions"]
            if legal["type"] == "pass":
                cards = sorted(legal["from"], key=_rank)[-legal["count"] :]
                action: Any = {"type": "pass", "cards": cards}
            elif legal["type"] == "moon":
                action = {"type": "moon", "choice": "subtract"}
            else:
                action = {"type": "play", "card": min(legal["cards"], key=_rank)}
            try:
                client.tables.act(table["id"], action, version=event["version"])
            except StaleVersion as exc:  # never replayed by the SDK: the stream sends the turn again
                assert exc.code == "stale_version" and exc.version is not None
    assert events[0]["type"] == "state"
    assert events[-1]["type"] == "table_finished" and events[-1]["status"] == "finished"
    assert all(e["type"] in EVENT_TYPES for e in events)
    final = client.tables.get(table["id"])
    assert final["status"] == "finished"
    assert client.tables.scoresheet(table["id"])["totals"] == events[-1]["totals"]
    export = client.tables.export(table["id"])  # the finished game's document, and its transcript
    assert export["totals"] == events[-1]["totals"] and export["format"] == "hearts-game/1"
    assert len(export["hands"]) == TableRow.objects.get(pk=table["id"]).hand_number
    assert client.tables.transcript(table["id"]).strip()
    posts = [r for r in seen if isinstance(r, httpx.Request) and r.method == "POST"]
    assert posts and all(r.headers.get("Idempotency-Key") for r in posts)
    actions = [r for r in posts if r.url.path.endswith("/actions")]
    assert actions and all(r.headers.get("If-Match") for r in actions)
    assert len({r.headers["Idempotency-Key"] for r in actions}) == len(actions)  # one per logical call
    plays = Move.objects.filter(table_id=table["id"], kind="play", position=0)
    assert plays.count() == 13 * TableRow.objects.get(pk=table["id"]).hand_number
    client.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_async_bot_plays_a_hand(web: Callable[..., str], workers: Callable[..., object]) -> None:
    """The Bot helper on the async client plays a whole hand, then leaves the stream."""
    workers()
    base = web()

    class OneHand(Lowest):
        scored: list[Event] = []

        def on_event(self, event: Event) -> None:
            if event["type"] == "hand_scored":
                self.scored.append(event)
                self.stop()

    async def play() -> Table:
        async with await AsyncHeartsClient.as_guest(base, "async") as client:
            table = await client.tables.create(bots={1: "basic", 2: "basic", 3: "basic"}, clocks=NO_CLOCKS)
            return await OneHand().arun(client, table["id"])

    table = asyncio.run(asyncio.wait_for(play(), 180))
    assert len(OneHand.scored) == 1 and len(OneHand.scored[0]["points"]) == 4
    assert table["game"] is not None and len(table["game"]["scoresheet"]) >= 1
    mine = Move.objects.filter(table_id=table["id"], hand=1, position=0)
    assert mine.filter(kind="play").count() == 13 and mine.filter(kind="pass").count() == 1
    acted = [m for m in mine if m.kind in ("pass", "play", "moon")]
    assert all(m.idempotency_key == f"bot-{table['id']}-0-{m.seq - 1}" for m in acted if m.kind == "play")


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_stream_resumes_after_the_connection_is_cut(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """A bot-only game followed through a relay whose connections are cut every few events: the
    stream resumes from the last event id each time, and what it yields is exactly the REST log."""
    workers()
    proxy = Proxy(web())
    client = HeartsClient.as_guest(proxy.base, "watcher", retry=Retry(backoff=0.05))
    # A hand is about 60 events and a game to 100 lasts at least four hands, so four cuts every 20
    # events always land while the game goes on (a game to 50 could end after two hands, before
    # the fourth cut). The bots are paced (20 ms a card): unpaced, a bot-only game can run ahead of
    # the client, whose resumed connection then brings the rest of the game in one read, so that a
    # later cut lands after the last event is already in its buffer (seen once in CI: 2 reconnects).
    table = client.tables.create(
        options={"target_score": 100},
        bots={0: "random", 1: "random", 2: "random", 3: "random"},
        bot_pace_ms=20,
    )
    stream = client.streams.table(table["id"])
    streamed: list[Event] = []
    cuts, next_cut = 0, 20
    deadline = time.monotonic() + 240
    try:
        for event in stream:
            assert time.monotonic() < deadline, "the game did not finish"
            streamed.append(event)
            # Cut every 20 events, once the previous cut was resumed, while the game goes on.
            if len(streamed) >= next_cut and stream.reconnects == cuts < 4:
                proxy.cut()
                cuts, next_cut = cuts + 1, len(streamed) + 20
    finally:
        proxy.close()
    assert stream.reconnects >= 4
    assert streamed[-1]["type"] == "table_finished"
    assert streamed[0]["type"] == "state"
    logged: list[dict[str, Any]] = []
    after = int(streamed[0]["id"])  # the state covers every move up to its id
    while True:
        page = client.tables.events(table["id"], after)
        logged += page["events"]
        after = page["version"]
        if not page["more"]:
            break
    got = [(e.get("seq"), e["type"]) for e in streamed if e["type"] not in ("state", "your_turn")]
    assert got == [(e["seq"], e["type"]) for e in logged]  # nothing missed, nothing repeated
    ids = [e.get("id") for e in streamed]
    assert len(set(ids)) == len(ids)


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_retries_honour_retry_after_and_keep_the_key(web: Callable[..., str]) -> None:
    """Over a low rate limit every call still succeeds: each 429 is waited out for its Retry-After
    and sent again with the same Idempotency-Key (no write acts twice); with one attempt the 429
    is raised as RateLimited. A lobby write at a stale version is retried at the current one; an
    action at a stale version is raised, never replayed."""
    base = web(RATE_LIMIT_TOKEN="4/2second")
    seen: list[httpx.Request | httpx.Response] = []
    client = HeartsClient.as_guest(base, "limited", http=_counting(seen))
    # The limit's windows are fixed 2-second spans of the clock (games/infra/ratelimit.py): start the
    # burst just after one begins, so the six creates all fall in one window and the fifth is refused
    # (split 3 + 3 across a window edge, none would be).
    time.sleep(2 - time.time() % 2 + 0.02)
    started = time.monotonic()
    tables = [client.tables.create(bots={1: "basic", 2: "basic"}) for _ in range(6)]
    reads = [client.tables.get(t["id"]) for t in tables]
    assert [t["id"] for t in reads] == [t["id"] for t in tables]
    limited = [r for r in seen if isinstance(r, httpx.Response) and r.status_code == 429]
    assert limited, "the limit was never reached"
    assert all(r.headers["Retry-After"].isdigit() for r in limited)
    assert time.monotonic() - started >= 1  # waited, not hammered
    posts = [r for r in seen if isinstance(r, httpx.Request) and r.url.path.endswith("/tables")]
    assert len({r.headers["Idempotency-Key"] for r in posts}) == 6 < len(posts)  # retried, same keys
    assert TableRow.objects.filter(pk__in=[t["id"] for t in tables]).count() == 6

    once = HeartsClient(base, client.token, retry=Retry(attempts=1))
    with pytest.raises(RateLimited) as raised:
        for _ in range(10):
            once.tables.get(tables[0]["id"])
    assert raised.value.code == "rate_limited" and raised.value.status == 429
    assert raised.value.retry_after is not None and raised.value.retry_after > 0

    # A join at a stale version: the SDK retries at the version the 409 names.
    time.sleep(2.1)
    table = tables[0]
    other = HeartsClient.as_guest(base, "other")
    other.tables.add_bot(table["id"], "basic", version=table["version"])
    joined = client.tables.join(table["id"], version=table["version"])
    assert joined["status"] == "passing" and joined["your_seat"] is not None
    stale = [r for r in seen if isinstance(r, httpx.Response) and r.status_code == 409]
    assert stale and stale[-1].json()["code"] == "stale_version"
    # An action at a stale version is raised with the current version.
    assert joined["game"] is not None and joined["game"]["legal_actions"] is not None
    cards = joined["game"]["legal_actions"]["from"][:3]
    with pytest.raises(StaleVersion) as conflict:
        client.tables.pass_cards(table["id"], cards, version=joined["version"] - 1)
    assert conflict.value.version == joined["version"]
    client.close()
    other.close()
    once.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_me_a_stream_ticket_and_a_conditional_read(web: Callable[..., str]) -> None:
    """`me()` names the caller and its tables; a stream ticket's `url` opens the table's stream
    without credentials (as a browser's EventSource would), first with the table's state; a read
    conditional on the version seen answers None until the table changes."""
    base = web()
    with HeartsClient.as_guest(base, "me") as client:
        assert client.me.get()["kind"] == "guest" and client.me.get()["tables"] == []
        table = client.tables.create(bots={1: "basic", 2: "basic"})
        table = client.tables.join(table["id"], 3)
        me = client.me.get()
        assert me["player"] is not None and me["player"]["name"] == "me"
        assert [(t["id"], t["seat"]) for t in me["tables"]] == [(table["id"], 3)]
        ticket = client.streams.table_ticket(table["id"])
        with httpx.Client(timeout=30) as anonymous, connect_sse(anonymous, "GET", ticket["url"]) as source:
            first = next(source.iter_sse())
        assert first.event == "state" and json.loads(first.data)["state"]["your_seat"] == 3
        assert client.tables.get_if_changed(table["id"], table["version"]) is None
        changed = client.tables.get_if_changed(table["id"], table["version"] - 1)
        assert changed is not None and changed["version"] == table["version"]


def test_quick_play_and_a_rematch_through_the_sdk(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """Three guests ask for quick play with the same criteria: they share one table, which starts
    when full (`match_found`); leaving the queue is one call; after the game, played out by the
    three clients, each asks for a rematch and a new table starts, linked both ways."""
    base = web()
    workers()
    clients = [HeartsClient.as_guest(base, f"q{i}") for i in range(4)]
    try:
        options = {"players": 3, "target_score": 50}
        first = clients[0].quick_play.join(options=options, bot_level=None, wait_seconds=300)
        assert first["status"] == "open" and clients[0].quick_play.get() is not None
        clients[3].quick_play.join(options=options, bot_level=None, wait_seconds=300)
        clients[3].quick_play.leave()
        assert clients[3].quick_play.get() is None
        clients[1].quick_play.join(options=options, bot_level=None, wait_seconds=300)
        full = clients[2].quick_play.join(options=options, bot_level=None, wait_seconds=300)
        assert full["id"] == first["id"] and full["status"] == "passing"
        assert clients[0].quick_play.get() is None
        kinds = [e["type"] for e in clients[0].tables.events(first["id"])["events"]]
        assert kinds.index("match_found") == kinds.index("game_started") - 1

        table_id = first["id"]
        while True:  # the three people play at random to the end
            table = clients[0].tables.get(table_id)
            if table["status"] == "finished":
                break
            game = table["game"]
            assert game is not None
            for seat in game["to_act"]:
                client = clients[seat]  # client i took seat i
                legal = client.tables.get(table_id)["game"]["legal_actions"]
                if legal is None:
                    continue
                if legal["type"] == "pass":
                    client.tables.act(table_id, {"type": "pass", "cards": legal["from"][:3]})
                elif legal["type"] == "moon":
                    client.tables.act(table_id, {"type": "moon", "choice": "add"})
                else:
                    client.tables.act(table_id, {"type": "play", "card": legal["cards"][0]})
        for client in clients[:3]:
            answer = client.tables.rematch(table_id)
        assert answer["rematch"] is not None and answer["rematch"]["asked"] == [0, 1, 2]
        new_id = answer["rematch"]["table"]
        assert new_id is not None
        new = clients[0].tables.get(new_id)
        assert new["rematch_of"] == table_id and new["your_seat"] == 1
    finally:
        for client in clients:
            client.close()


def test_private_tables_invites_and_the_language_through_the_sdk(web: Callable[..., str]) -> None:
    """A private table is invisible to a stranger until they hold a code; the code joins it; a
    revoked code is refused; a player's language makes error details Basque with the same code."""
    base = web()
    with HeartsClient.as_guest(base, "host") as host, HeartsClient.as_guest(base, "friend") as friend:
        table = host.tables.create(visibility="private", bots={2: "basic", 3: "basic"})
        host.tables.join(table["id"], 0)
        with pytest.raises(HeartsError) as hidden:
            friend.tables.get(table["id"])
        assert hidden.value.code == "not_found"
        revoked = host.invites.create(table["id"])["code"]
        code = host.invites.create(table["id"], uses=1)["code"]
        host.invites.revoke(table["id"], revoked)
        assert [i["hint"] for i in host.invites.list(table["id"])] == [code[:4]]
        with pytest.raises(HeartsError) as refused_code:
            friend.invites.join(revoked)
        assert refused_code.value.code == "invite_invalid"
        assert friend.invites.get_table(code)["id"] == table["id"]
        seated = friend.invites.join(code)
        assert seated["your_seat"] == 1 and seated["status"] == "passing"  # full: it started
        assert friend.me.update("eu")["language"] == "eu"
        with pytest.raises(HeartsError) as refused:
            friend.tables.act(table["id"], {"type": "play", "card": "2C"})  # passing, not playing
        assert refused.value.code == "wrong_phase"
        english = friend.me.update(None)
        assert english["language"] in ("", None)
        with pytest.raises(HeartsError) as again:
            friend.tables.act(table["id"], {"type": "play", "card": "2C"})
        assert again.value.code == "wrong_phase" and str(again.value) != str(refused.value)
        delayed = host.tables.create(spectator_delay={"tricks": 2})
        assert delayed["spectator_delay"] == {"tricks": 2}
        assert friend.tables.get(delayed["id"])["delayed"] is True  # a spectator, two tricks behind


def test_a_rated_game_through_the_sdk_shows_in_ratings_history_and_leaderboard(
    web: Callable[..., str],
) -> None:
    """Three guests play a rated table to the end with the SDK; each then reads their rating, their
    history and the guests' leaderboard, and the async client reads the same."""
    base = web()
    clients = [HeartsClient.as_guest(base, f"r{i}") for i in range(3)]
    try:
        table = clients[0].tables.create(options={"players": 3, "target_score": 50}, rated=True)
        assert table["rated"] is True
        for seat, client in enumerate(clients):
            client.tables.join(table["id"], seat)
        while True:
            if clients[0].tables.get(table["id"])["status"] == "finished":
                break
            for client in clients:
                legal = client.tables.get(table["id"])["game"]["legal_actions"]
                if legal is None:
                    continue
                if legal["type"] == "pass":
                    client.tables.act(table["id"], {"type": "pass", "cards": legal["from"][:3]})
                elif legal["type"] == "moon":
                    client.tables.act(table["id"], {"type": "moon", "choice": "add"})
                else:
                    client.tables.act(table["id"], {"type": "play", "card": legal["cards"][0]})
        me = clients[0].me.get()["player"]
        assert me is not None
        mine = clients[0].ratings.player(me["id"])
        assert [(r["family"], r["games"]) for r in mine["ratings"]] == [("classic-3", 1)]
        history = clients[0].ratings.history(me["id"], family="classic-3")
        assert [c["table"] for c in history["results"]] == [table["id"]] and history["next"] is None
        board = clients[1].ratings.leaderboard("classic-3")
        assert len(board["results"]) == 3
        assert [r["score"] for r in board["results"]] == sorted(
            (r["score"] for r in board["results"]), reverse=True
        )
        assert clients[2].ratings.system()["model"] == "PlackettLuce"

        async def read() -> list[str]:
            async with AsyncHeartsClient(base, token=clients[0].token) as client:
                page = await client.ratings.leaderboard("classic-3")
                return [r["name"] for r in page["results"]]

        assert sorted(asyncio.run(read())) == ["r0", "r1", "r2"]
    finally:
        for client in clients:
            client.close()


def test_a_bot_tournament_through_the_sdk_on_the_bot_lane_equals_the_command(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """An app runs a bot-only tournament on real workers (its tables' moves split over several
    tasks each): the standings give exactly the gap and interval of `python -m bots.tournament`.
    The bulk lane's worker creates its tables (the creation answers `starting` before they exist)."""
    base = web()
    workers()
    _, key = app_create(name="measure")
    with HeartsClient(base, key) as hearts:
        made = hearts.tournaments.create([{"bot": "basic"}, {"bot": "random"}], 2, seed="9")
        assert made["tables_total"] == 8 and made["seed"] == "9"
        deadline = time.monotonic() + 120
        while hearts.tournaments.get(made["id"])["status"] != "finished":
            assert time.monotonic() < deadline, hearts.tournaments.get(made["id"])
            time.sleep(0.2)
        standings = hearts.tournaments.standings(made["id"])
        tables = hearts.tournaments.tables(made["id"])
        assert [t["id"] for t in hearts.tournaments.list()] == [made["id"]]
        first = hearts.tables.events(tables[0]["id"])["events"]
    expected = tournament.run("basic", "random", deal_sets=2, seed=9, progress=False)
    best = next(row for row in standings["entrants"] if row["entrant"] == 0)
    assert best["rank"] == 1 and best["relative_points"] == expected.gap
    assert (best["ci95_low"], best["ci95_high"]) == expected.gap_ci95
    assert len(tables) == 8 and {t["status"] for t in tables} == {"finished"}
    assert first[0]["type"] == "bot_added" and "tournament_table" in [e["type"] for e in first]
    assert "tournament_progress" in [e["type"] for e in first]


def test_webhooks_and_hands_through_the_sdk(web: Callable[..., str], workers: Callable[..., object]) -> None:
    """An app's webhook endpoint through both clients: created (its secret shown once), listed,
    changed, its secret rotated; a bot-only game at the app makes deliveries (to a port nobody
    listens on, so they fail and are retried), read page by page with `deliveries_all`, one read
    whole and sent again; then deleted. The game's hands: listed, and one replayed with its record."""
    base = web()
    workers(queues="clocks,people,bots,webhooks")
    _, key = app_create(name="hooks")
    with HeartsClient(base, key) as app:
        made = app.webhooks.create(
            "http://127.0.0.1:9/hook", event_types=["table_finished"], description="sdk"
        )
        assert made["secret"] and made["event_types"] == ["table_finished"]
        assert [w["id"] for w in app.webhooks.list()] == [made["id"]]
        changed = app.webhooks.update(made["id"], description="changed")
        assert changed["description"] == "changed" and "secret" not in changed
        assert app.webhooks.rotate_secret(made["id"])["secret"] != made["secret"]
        table = app.tables.create(
            options={"hands": 1}, bots={0: "random", 1: "random", 2: "random", 3: "random"}
        )
        deadline = time.monotonic() + 60
        while not (deliveries := list(app.webhooks.deliveries_all(made["id"]))):
            assert time.monotonic() < deadline, app.tables.get(table["id"])["status"]
            time.sleep(0.2)
        assert {d["table"] for d in deliveries} == {table["id"]}
        detail = app.webhooks.get_delivery(made["id"], deliveries[0]["id"])
        assert detail["body"] and detail["id"] == deliveries[0]["id"]
        again = app.webhooks.redeliver(made["id"], deliveries[0]["id"])
        assert again["status"] == "pending"
        hands = app.hands.list(table["id"])
        assert [h["number"] for h in hands] == [1] and hands[0]["finished"]
        replay = app.hands.get(table["id"], 1)
        assert replay["record"] is not None and replay["moves"]

        async def read_async() -> tuple[int, str]:
            async with AsyncHeartsClient(base, key) as client:
                found = [d async for d in client.webhooks.deliveries_all(made["id"], status="pending")]
                await client.webhooks.delete(made["id"])
                return len(found), (await client.hands.get(table["id"], 1))["deal_commitment"]

        pending, commitment = asyncio.run(read_async())
        assert pending >= 1 and commitment == replay["deal_commitment"]
        with pytest.raises(NotFound):
            app.webhooks.get(made["id"])


# -- resources: one method per operation, grouped by resource; the flat names are gone (0.x) --------

# Method -> (the call, the request it sends).
RESOURCE_CALLS: dict[str, tuple[tuple[Any, ...], str, str]] = {
    "me.get": ((), "GET", "/api/v1/me"),
    "me.update": (("eu",), "PATCH", "/api/v1/me"),
    "me.turns": ((), "GET", "/api/v1/me/turns"),
    "tables.join": ((7,), "POST", "/api/v1/tables/7/join"),
    "tables.leave": ((7,), "POST", "/api/v1/tables/7/leave"),
    "tables.start": ((7,), "POST", "/api/v1/tables/7/start"),
    "tables.abandon": ((7,), "POST", "/api/v1/tables/7/abandon"),
    "tables.reclaim_seat": ((7,), "POST", "/api/v1/tables/7/back"),
    "tables.rematch": ((7,), "POST", "/api/v1/tables/7/rematch"),
    "tables.act": ((7, {"type": "play", "card": "QS"}), "POST", "/api/v1/tables/7/actions"),
    "tables.export": ((7,), "GET", "/api/v1/tables/7/export"),
    "tables.scoresheet": ((7,), "GET", "/api/v1/tables/7/scoresheet"),
    "tables.events": ((7,), "GET", "/api/v1/tables/7/events"),
    "tables.moves": ((7,), "GET", "/api/v1/tables/7/moves"),
    "hands.get": ((7, 2), "GET", "/api/v1/tables/7/hands/2"),
    "quick_play.get": ((), "GET", "/api/v1/quick-play"),
    "invites.get_table": (("abc",), "GET", "/api/v1/invites/abc"),
    "tournaments.get": ((3,), "GET", "/api/v1/tournaments/3"),
    "tournaments.standings": ((3,), "GET", "/api/v1/tournaments/3/standings"),
    "ratings.system": ((), "GET", "/api/v1/ratings"),
    "ratings.player": ((4,), "GET", "/api/v1/players/4/ratings"),
    "webhooks.get": ((5,), "GET", "/api/v1/webhooks/5"),
    "webhooks.update": ((5,), "PATCH", "/api/v1/webhooks/5"),
    "webhooks.rotate_secret": ((5,), "POST", "/api/v1/webhooks/5/secret"),
    "webhooks.get_delivery": ((5, "d1"), "GET", "/api/v1/webhooks/5/deliveries/d1"),
    "webhooks.redeliver": ((5, "d1"), "POST", "/api/v1/webhooks/5/deliveries/d1/redeliver"),
    "keys.create": ((["tables:read"],), "POST", "/api/v1/app/keys"),
    "keys.page": ((), "GET", "/api/v1/app/keys"),
    "keys.revoke": ((6,), "POST", "/api/v1/app/keys/6/revoke"),
    "keys.rotate": ((6,), "POST", "/api/v1/app/keys/6/rotate"),
    "players.refresh_token": ((), "POST", "/api/v1/tokens/refresh"),
    "tables.review": ((7, 1), "GET", "/api/v1/tables/7/hands/1/review"),
}


def _method(client: Any, name: str) -> Any:
    resource, method = name.split(".")
    return getattr(getattr(client, resource), method)


@pytest.mark.parametrize("name", sorted(RESOURCE_CALLS))
def test_resource_methods_send_their_operation_from_both_clients(name: str) -> None:
    """The sync and the async client send the same request for the same method: they share the
    operation's description and differ only in the transport."""
    args, method, path = RESOURCE_CALLS[name]
    answer = {**TABLE, "kind": "player", "tables": [], "language": "eu"}
    sent, transport = _scripted(*[httpx.Response(200, json=answer) for _ in range(2)])
    _method(_client(transport), name)(*args)

    async def run() -> None:
        http = httpx.AsyncClient(transport=transport)
        async with AsyncHeartsClient("http://hearts.test", "t", retry=FAST, http=http) as client:
            await _method(client, name)(*args)

    asyncio.run(run())
    assert [(r.method, r.url.path) for r in sent] == [(method, path)] * 2
    writes = [r.headers.get("Idempotency-Key") for r in sent]
    assert all(writes) if method != "GET" else not any(writes)


def test_the_flat_method_names_are_gone() -> None:
    """0.x: the SDK's methods live on resources (`client.tables.join`); the flat ones were removed
    (docs/clients.md, "Changelog")."""
    for cls in (HeartsClient, AsyncHeartsClient):
        names = set(dir(cls))
        assert not names & {"join_table", "get_table", "create_table", "submit_action", "stream", "me", "act"}
        assert {"socket", "use_token", "as_guest"} <= names


def test_list_all_follows_the_cursor_pages_sync_and_async() -> None:
    """`list_all` (and `deliveries_all`, `leaderboard_all`, `history_all`) asks page after page with
    the cursor that `next` names, keeping the filters, and yields every item once."""
    row = {"id": 1}
    pages = [
        {
            "next": "http://hearts.test/api/v1/tables?cursor=c2&status=open",
            "previous": None,
            "results": [row, row],
        },
        {"next": "http://hearts.test/api/v1/tables?cursor=c3&status=open", "previous": "x", "results": [row]},
        {"next": None, "previous": "x", "results": [row]},
    ]
    sent, transport = _scripted(*[httpx.Response(200, json=page) for page in pages * 2])
    assert len(list(_client(transport).tables.list_all(status="open"))) == 4

    async def run() -> int:
        http = httpx.AsyncClient(transport=transport)
        async with AsyncHeartsClient("http://hearts.test", "t", retry=FAST, http=http) as client:
            return len([t async for t in client.tables.list_all(status="open")])

    assert asyncio.run(run()) == 4
    queries = [dict(r.url.params) for r in sent]
    assert (
        queries
        == [{"status": "open"}, {"status": "open", "cursor": "c2"}, {"status": "open", "cursor": "c3"}] * 2
    )


def test_stream_tickets_and_streams_have_one_method_per_operation() -> None:
    ticket = {"ticket": "t", "expires_at": "2027-01-01T00:00:00Z", "url": "http://x/stream?ticket=t"}
    sent, transport = _scripted(*[httpx.Response(201, json=ticket) for _ in range(2)])
    client = _client(transport)
    client.streams.table_ticket(7)
    client.streams.my_ticket()
    paths = [r.url.path for r in sent]
    assert paths == ["/api/v1/tables/7/stream-tickets", "/api/v1/me/stream-tickets"]
    assert client.streams.table(7).state.path == "tables/7/stream"
    assert client.streams.mine().state.path == "me/stream"


# -- one socket: GraphQL subscriptions, queries and mutations (hearts_client.socket) -------------


def _ndjson(base: str, path: str, token: str, last: str) -> list[dict[str, Any]]:
    """The stream of `path` for this token after `last`, as NDJSON, to its end."""
    headers = {"Authorization": f"Bearer {token}", "Last-Event-ID": last}
    with httpx.stream("GET", f"{base}{path}?format=ndjson", headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line) for line in response.iter_lines() if line]


def _same_as_the_stream(base: str, table_id: int, token: str, received: list[Event]) -> None:
    """What a subscription yielded is the SSE stream of the same viewer from the same first
    position: the same ids in the same order (no gap, no repeat) and the same events, field by
    field (a field REST leaves out may come as None over GraphQL)."""
    assert received[0]["type"] == "state"
    first = cast(dict[str, Any], received[0])
    logged = [cast(dict[str, Any], e) for e in received if e["type"] not in ("state", "your_turn")]
    stream = _ndjson(base, f"/api/v1/tables/{table_id}/stream", token, first["id"])
    ids = [e["id"] for e in logged]
    assert ids == [e["id"] for e in stream]
    assert len(set(ids)) == len(ids)
    for got, sent in zip(logged, stream, strict=True):
        assert {k: v for k, v in got.items() if v is not None} == {
            k: v for k, v in sent.items() if v is not None
        }, (got, sent)


def test_socket_documents_select_every_field_of_every_message_type() -> None:
    """The SDK's subscription documents select every field of every StreamEvent type (a table:
    every field of the REST body), pass the server's own checks (depth, cost, aliases), and its
    codes' statuses are those of docs/errors.md."""
    from graphql import FieldNode, InlineFragmentNode, get_named_type, parse
    from hearts_client import _socket

    from games.graphql.schema import schema
    from games.graphql.view import HeartsGraphQLView

    gs = schema.graphql_schema
    view = HeartsGraphQLView()
    variables = {"tableId": 1, "id": 1, "type": "play"}
    for name in ("TABLE_EVENTS", "MY_EVENTS", "GET_TABLE", "SUBMIT_ACTION", "JOIN_TABLE", "LEAVE_TABLE"):
        prepared = view.prepare(getattr(_socket, name), variables, None)
        assert not isinstance(prepared, dict), (name, prepared)

    def fields(selection: Any, parent: Any) -> None:
        """Every field of `parent` selected, recursively (Table: but its paginated reads)."""
        selected = {n.name.value: n for n in selection.selections if isinstance(n, FieldNode)}
        wanted = set(parent.fields)
        if parent.name == "Table":
            wanted -= {"scoresheet", "moves", "events", "hands", "hand", "hint"}  # not in the REST body
        assert set(selected) - {"__typename"} == wanted, parent.name
        for key, node in selected.items():
            if node.selection_set is not None:
                fields(node.selection_set, get_named_type(parent.fields[key].type))

    document = parse(_socket.TABLE_EVENTS)
    root = document.definitions[0].selection_set.selections[0]  # type: ignore[attr-defined]
    fragments = {
        n.type_condition.name.value: n
        for n in root.selection_set.selections
        if isinstance(n, InlineFragmentNode)
    }
    possible = {t.name for t in gs.get_possible_types(gs.get_type("StreamEvent"))}
    assert set(fragments) == possible
    for type_name, fragment in fragments.items():
        kind = gs.get_type(type_name)
        with_id = type(fragment.selection_set)(
            selections=(*fragment.selection_set.selections, FieldNode(name=type("N", (), {"value": "id"})()))
        )
        fields(with_id, kind)

    documented = dict(
        re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", (ROOT / "docs/errors.md").read_text(), flags=re.M)
    )
    assert {c: int(s) for c, s in documented.items()} | {"internal_error": 500} == _socket.CODE_STATUS


def test_socket_answers_turn_back_into_the_rest_shapes() -> None:
    from hearts_client import _socket

    message = {
        "__typename": "YourTurnEvent",
        "id": "12",
        "table": 3,
        "version": 12,
        "hand": 1,
        "phase": "passing",
        "seat": 0,
        "legalActions": {"type": "pass", "count": 3, "from": ["2C"], "cards": None, "choices": None},
        "deadline": None,
    }
    assert _socket.event_of(message) == {
        "id": "12",
        "table": 3,
        "type": "your_turn",
        "seq": 12,
        "version": 12,
        "hand": 1,
        "phase": "passing",
        "seat": 0,
        "legal_actions": {"type": "pass", "count": 3, "from": ["2C"]},
        "deadline": None,
    }
    won = {"__typename": "TrickWonEvent", "id": "9:2", "type": "trick_won", "TrickWonEvent_points": 1}
    assert _socket.event_of(won) == {"id": "9:2", "type": "trick_won", "points": 1}
    stale = _socket.graphql_error([{"code": "stale_version", "message": "moved on", "field": None}])
    assert isinstance(stale, StaleVersion) and stale.status == 409 and stale.version is None
    limited = _socket.graphql_error(
        [{"message": "slow", "extensions": {"code": "rate_limited", "retry_after": 2}}]
    )
    assert isinstance(limited, RateLimited) and limited.retry_after == 2
    full = _socket.graphql_error([{"code": "quota_exceeded", "message": "full", "quota": "open_tables"}])
    assert isinstance(full, QuotaExceeded) and not isinstance(full, RateLimited) and full.status == 429
    assert isinstance(_socket.graphql_error([{"code": "must_follow_suit", "message": "x"}]), RulesError)
    gone = _socket.closing(4403, "authentication_failed: unknown token")
    assert not gone.retry and gone.error.code == "authentication_failed"
    assert _socket.closing(1006, "").retry and _socket.closing(4429, "rate_limited: wait").retry
    assert not _socket.closing(4429, "invalid_request: too many initialisation requests").retry
    assert _socket.socket_url("https://h.example/api/v1/") == "wss://h.example/graphql/"


class Cutting(Lowest):
    """Records every event; cuts the relay's connections after the given counts of events."""

    def __init__(self, proxy: Proxy, cuts: list[int]) -> None:
        self.proxy, self.cuts = proxy, cuts
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        if self.cuts and len(self.events) >= self.cuts[0]:
            self.cuts.pop(0)
            self.proxy.cut()


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_sync_bot_plays_a_whole_game_over_one_socket_resumed_after_drops(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """The Bot helper on the sync client plays a whole game over one WebSocket (the joinTable
    mutation, the tableEvents subscription, the table query and submitAction): no HTTP request
    after the table is made. The socket is cut three times mid-game; the events the subscription
    yielded are exactly the SSE stream's for the same seat (same ids, no gap, no repeat)."""
    workers()
    base = web()
    proxy = Proxy(base)
    seen: list[httpx.Request | httpx.Response] = []
    client = HeartsClient.as_guest(proxy.base, "socket", http=_counting(seen), retry=Retry(backoff=0.05))
    table = client.tables.create(
        options={"target_score": 50}, bots={1: "random", 2: "random", 3: "random"}, clocks=NO_CLOCKS
    )
    requests = len(seen)
    bot = Cutting(proxy, [30, 90, 150])
    try:
        final = bot.run(client, table["id"], 0, socket=True)
    finally:
        proxy.close()
    assert len(seen) == requests, "an HTTP request during the game"
    assert final["status"] == "finished" and final["your_seat"] == 0
    assert not bot.cuts, "the game ended before the third cut"
    assert bot.events[-1]["type"] == "table_finished"
    assert client.token is not None
    _same_as_the_stream(base, table["id"], client.token, bot.events)
    mine = Move.objects.filter(table_id=table["id"], position=0, kind__in=["pass", "play", "moon"])
    hands = TableRow.objects.get(pk=table["id"]).hand_number
    assert mine.filter(kind="play").count() == 13 * hands  # nothing acted twice
    assert all(m.idempotency_key == f"bot-{table['id']}-0-{m.seq - 1}" for m in mine if m.kind == "play")
    client.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_async_socket_plays_a_hand_with_mutations_resumed_after_a_drop(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """The async client plays a one-hand game by hand over one socket: `subscribe_table_events`,
    and on each `your_turn` a mutation (`pass_cards`, `play`, `choose_moon`) at its version on the
    same socket. The socket is cut mid-hand; the subscription resumes with `after` and what it
    yielded equals the SSE stream; `subscribe_my_events` starts with the player's tables; errors
    come back as the REST client's exceptions."""
    workers()
    base = web()
    proxy = Proxy(base)

    async def play() -> tuple[list[Event], int, str, int]:
        async with await AsyncHeartsClient.as_guest(proxy.base, "async socket") as client:
            table = await client.tables.create(
                options={"hands": 1}, bots={1: "basic", 2: "basic", 3: "basic"}, clocks=NO_CLOCKS
            )
            events: list[Event] = []
            async with client.socket() as ws:
                mine = ws.subscribe_my_events()
                async for first in mine:
                    assert first["type"] == "tables" and first["tables"] == []
                    break
                joined = await ws.join_table(table["id"], 0, version=table["version"])
                assert joined["your_seat"] == 0 and joined["status"] == "passing"
                with pytest.raises(RulesError) as refused:
                    await ws.play(table["id"], "2C")  # passing, not playing
                assert refused.value.code == "wrong_phase"
                stream = ws.subscribe_table_events(table["id"])
                async for event in stream:
                    events.append(event)
                    if len(events) == 25:
                        proxy.cut()
                    if event["type"] != "your_turn":
                        continue
                    legal, version = event["legal_actions"], event["version"]
                    try:
                        if legal["type"] == "pass":
                            cards = sorted(legal["from"], key=_rank)[-legal["count"] :]
                            await ws.pass_cards(table["id"], cards, version=version)
                        elif legal["type"] == "moon":
                            await ws.choose_moon(table["id"], "subtract", version=version)
                        else:
                            await ws.play(table["id"], min(legal["cards"], key=_rank), version=version)
                    except StaleVersion:
                        pass  # the subscription sends the turn again
                final = await ws.get_table(table["id"])
                assert final["status"] == "finished"
                return events, table["id"], cast(str, client.token), ws.reconnects

    try:
        events, table_id, token, reconnects = asyncio.run(asyncio.wait_for(play(), 180))
    finally:
        proxy.close()
    assert reconnects >= 1
    assert events[-1]["type"] == "table_finished"
    _same_as_the_stream(base, table_id, token, events)
    assert Move.objects.filter(table_id=table_id, position=0, kind="play").count() == 13


def _docs_block(language: str) -> str:
    """The first `language` block of docs/clients.md's "Subscriptions over one socket"."""
    text = (ROOT / "docs/clients.md").read_text()
    section = text.split("### Subscriptions over one socket", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_socket_example_of_the_docs_runs(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    """docs/clients.md's Python example over one socket, as written, against a live server: it
    plays its one-hand game and a spectator replays it to `table_finished`."""
    workers()
    base = web()
    script = tmp_path / "example.py"
    script.write_text(_docs_block("python").replace("http://localhost:8000", base))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    scores, last = result.stdout.strip().splitlines()[-2:]
    assert len(json.loads(scores)) == 4 and last == "table_finished"
