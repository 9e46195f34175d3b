"""GraphQL subscriptions with the clients apps really use, on real servers (uvicorn, PostgreSQL, Redis,
a Celery worker playing four bots to the end of their game):

- under Node 20, the `graphql-ws` npm client and Apollo Client (`GraphQLWsLink`), both on `ws`
  (tests/node/follow.mjs, a subscription selecting each message type with fragments), follow a
  bot game to its `complete`; a third graphql-ws client follows it through a relay whose
  connections are cut mid-game, reconnects by itself and resumes with `after`;
- in headless Chromium, a page opens a WebSocket to /graphql/ with the graphql-transport-ws
  subprotocol, authenticates in `connection_init` with a stream ticket, follows the table to the
  end, and is refused (`ticket_invalid`) another table's events or the player stream with it.

Every follower must receive exactly what the REST event log shows the same viewer (the same
events, typed by `__typename`, field for field) with the ids of the NDJSON stream of the same
viewer: nothing missed, nothing repeated, through to `TableFinishedEvent` and the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from games.accounts import app_create, player_create
from games.graphql.schema import schema
from tests.bots.test_bot_client import Proxy
from tests.conftest import skip_or_fail
from tests.graphql.test_graphql import _selection
from tests.graphql.test_subscriptions import _rest_shape, _snake
from tests.node_modules_cache import node_modules, node_tools

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "tests" / "node"
CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright's own browser download is not used
NO_CLOCKS = {"pass": None, "play": None, "moon": None}
REVEALING = {"cards_dealt", "cards_passed", "cards_received"}  # a seat's own cards, to that seat only
SUBSCRIBE_ARGS = "tableEvents(tableId: $tableId, after: $after)"
GAME_SECONDS = 180  # far more than a game of four unpaced bots takes


# -- Node and its packages --------------------------------------------------------------------------


def _tools() -> tuple[str, str]:
    return node_tools("the subscription clients' tests need Node.js 20")


def _node_modules(npm: str) -> Path:
    return node_modules(npm, NODE, "hearts-node-clients")


@pytest.fixture(scope="module")
def node_clients(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """node, and a directory with tests/node's scripts beside the locked node_modules."""
    node, npm = _tools()
    modules = _node_modules(npm)
    build = tmp_path_factory.mktemp("node-clients")
    for script in NODE.glob("*.mjs"):
        shutil.copy(script, build / script.name)
    shutil.copy(NODE / "package.json", build / "package.json")  # "type": "module"
    (build / "node_modules").symlink_to(modules, target_is_directory=True)
    return node, build


class Follower:
    """One `node follow.mjs` process: its JSON lines, read as they come."""

    def __init__(
        self, node: str, build: Path, name: str, url: str, token: str, table_id: int, query: Path, *extra: str
    ) -> None:
        cmd = [node, "follow.mjs", "--url", url, "--token", token, "--table", str(table_id)]
        self.name, self.log = name, build / f"{name}.stderr"
        with open(self.log, "wb") as stderr:
            self.proc = subprocess.Popen(
                [*cmd, "--query", str(query), *extra],
                cwd=build,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
        self.lines: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(json.loads(raw))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [line["message"] for line in list(self.lines) if "message" in line]

    def running(self) -> bool:
        if self.proc.poll() is not None and self.proc.returncode != 0:
            raise AssertionError(f"{self.name} failed: {self.lines[-5:]} {self.log.read_text()[-2000:]}")
        return self.proc.poll() is None

    def wait(self, deadline: float) -> None:
        try:
            self.proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} did not finish: {self.lines[-3:]}") from None
        self.reader.join(10)
        assert self.proc.returncode == 0, f"{self.name}: {self.lines[-5:]} {self.log.read_text()[-2000:]}"
        assert self.log.read_text() == "", f"{self.name} warned: {self.log.read_text()[-2000:]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.reader.join(10)
            self.proc.stdout.close()


@pytest.fixture
def followers() -> Iterator[list[Follower]]:
    started: list[Follower] = []
    yield started
    for follower in started:
        follower.stop()


# -- the subscription document and the shapes compared ----------------------------------------------


def _document() -> str:
    """A typed subscription: `__typename`, and with a fragment per message type every field of that
    type (fields of one name and different types in two types aliased `<Type>_<field>`); of the
    state's table, its id, version and status."""
    gs = schema.graphql_schema
    kinds = gs.get_possible_types(gs.get_type("StreamEvent"))  # type: ignore[arg-type]
    types: dict[str, set[str]] = {}
    for kind in kinds:
        for name, field in kind.fields.items():
            types.setdefault(name, set()).add(str(field.type))
    clash = frozenset(n for n, t in types.items() if len(t) > 1)
    parts = []
    for kind in kinds:
        if kind.name == "TableStateEvent":
            inner = "id table state { id version status }"
        elif kind.name == "MyTablesEvent":
            inner = "id tables { id version status }"
        else:
            inner = _selection(kind, {}, aliased=clash)
        parts.append(f"... on {kind.name} {{ {inner} }}")
    return (
        "subscription FollowTable($tableId: Int!, $after: String) "
        f"{{ {SUBSCRIBE_ARGS} {{ __typename id {' '.join(parts)} }} }}"
    )


def _type_name(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("_")) + "Event"


def _rest_events(base: str, table_id: int, auth: dict[str, str], after: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        page = httpx.get(f"{base}/api/v1/tables/{table_id}/events?after={after}", headers=auth).json()
        out += page["events"]
        after = page["version"]
        if not page["more"]:
            return out


def _stream_ids(base: str, table_id: int, auth: dict[str, str], last: str) -> list[str]:
    """The ids of the NDJSON stream of the (finished) table for this viewer, after `last`."""
    headers = {**auth, "Last-Event-ID": last}
    ids = []
    url = f"{base}/api/v1/tables/{table_id}/stream?format=ndjson"
    with httpx.stream("GET", url, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line and json.loads(line)["type"] != "keepalive":
                ids.append(json.loads(line)["id"])
    return ids


def _check_exactly_the_log(
    name: str, messages: list[dict[str, Any]], base: str, table_id: int, auth: dict[str, str]
) -> None:
    """A follower's messages: the table's state first, then exactly the viewer's REST event log
    after that state (typed, field for field) with the viewer's stream ids, to table_finished."""
    assert messages, f"{name} received nothing"
    first = messages[0]
    assert first["__typename"] == "TableStateEvent", (name, first)
    assert first["table"] == first["state"]["id"] == table_id
    assert first["id"] == str(first["state"]["version"])
    events = messages[1:]
    ids = [m["id"] for m in events]
    assert len(set(ids)) == len(ids), f"{name}: an event repeated"
    rest = _rest_events(base, table_id, auth, first["state"]["version"])
    assert [m["__typename"] for m in events] == [_type_name(e["type"]) for e in rest], name
    assert [_rest_shape(_snake(m)) for m in events] == [_rest_shape(e) for e in rest], name
    assert all(m["table"] == table_id for m in events), name
    assert ids == _stream_ids(base, table_id, auth, first["id"]), f"{name}: not the stream's ids"
    assert events[-1]["__typename"] == "TableFinishedEvent", name
    assert _snake(events[-1])["status"] == "finished"
    assert not {e["type"] for e in rest} & REVEALING, f"{name} (not seated) saw a seat's cards"


# -- tables of four bots ----------------------------------------------------------------------------


def _bot_table(base: str, key: str, options: dict[str, Any]) -> int:
    """A table of four unpaced bots that starts at once; nothing moves until a worker runs."""
    body = {
        "options": options,
        "bots": {str(s): "random" for s in range(4)},
        "clocks": NO_CLOCKS,
        "bot_pace_ms": 0,
    }
    r = httpx.post(f"{base}/api/v1/tables", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "passing", r.json()
    return int(r.json()["id"])


def _until(check: Callable[[], bool], what: str, seconds: float = 30) -> float:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < seconds, f"timed out waiting for {what}"
        time.sleep(0.02)
    return time.monotonic() - start


# -- Node: graphql-ws and Apollo Client -------------------------------------------------------------


def test_node_clients_follow_a_bot_game_to_its_end(
    web: Callable[..., str],
    workers: Callable[..., object],
    node_clients: tuple[str, Path],
    followers: list[Follower],
    tmp_path: Path,
) -> None:
    node, build = node_clients
    base = web()
    app, key = app_create(name="node clients")
    _, watcher = player_create(app=app, name="watcher")  # a player of the app not seated: a spectator
    table_id = _bot_table(base, key, {"hands": 2})  # two hands, then game over
    query = tmp_path / "follow.graphql"
    query.write_text(_document())
    url = base.replace("http://", "ws://") + "/graphql/"
    proxy = Proxy(base)
    try:
        relayed = proxy.base.replace("http://", "ws://") + "/graphql/"
        plain = Follower(node, build, "graphql-ws", url, key, table_id, query)
        apollo = Follower(node, build, "apollo", url, watcher, table_id, query, "--client", "apollo")
        resumed = Follower(node, build, "resumed", relayed, key, table_id, query, "--retries", "5")
        followers.extend([plain, apollo, resumed])
        _until(lambda: all(f.messages or not f.running() for f in followers), "every client's first message")
        assert all(f.messages for f in followers), [f.lines for f in followers]

        started = time.monotonic()
        workers()  # the bots play from now on
        # Mid-game, every connection through the relay is cut: the client reconnects and resumes.
        _until(lambda: len(resumed.messages) >= 30 or not resumed.running(), "30 messages", GAME_SECONDS)
        assert resumed.running() and not any("complete" in line for line in resumed.lines)
        cut_at = len(resumed.messages)
        proxy.cut()
        deadline = started + GAME_SECONDS
        for follower in followers:
            follower.wait(deadline)
        game_seconds = time.monotonic() - started
    finally:
        proxy.close()

    bearer = {"Authorization": f"Bearer {key}"}
    for follower, auth in [
        (plain, bearer),
        (apollo, {"Authorization": f"Bearer {watcher}"}),
        (resumed, bearer),
    ]:
        lines = follower.lines
        assert not [line for line in lines if "error" in line or "errors" in line], (follower.name, lines)
        assert lines[-1] == {"complete": True}, (follower.name, lines[-3:])
        _check_exactly_the_log(follower.name, follower.messages, base, table_id, auth)
    # The plain clients kept one socket; the resumed one was cut once, after `cut_at` messages
    # (some of which may have been in flight), and came back on a second socket.
    for follower in (plain, apollo):
        assert [line["connected"] for line in follower.lines if "connected" in line] == [1], follower.name
    assert [line["connected"] for line in resumed.lines if "connected" in line] == [1, 2]
    closed = [line["closed"] for line in resumed.lines if "closed" in line]
    assert closed[0] == 1006  # abnormal closure: the relay cut it with no close frame
    assert 1 <= cut_at < len(resumed.messages) - 1
    assert resumed.messages == plain.messages  # one viewer, one message sequence, across the cut

    # The table is over: `after` an id in the middle gives exactly the rest (Apollo this time);
    # after its last one, the subscription completes at once with nothing.
    middle = len(plain.messages) // 2
    rest = Follower(
        node, build, "apollo-after", url, key, table_id, query, "--client", "apollo",
        "--after", plain.messages[middle]["id"],
    )  # fmt: skip
    end = Follower(
        node, build, "after-the-end", url, key, table_id, query, "--after", plain.messages[-1]["id"]
    )
    followers.extend([rest, end])
    for follower in (rest, end):
        follower.wait(time.monotonic() + 60)
        assert follower.lines[-1] == {"complete": True}, follower.lines[-3:]
        assert not [line for line in follower.lines if "error" in line or "errors" in line], follower.lines
    # (Apollo adds __typename to every selection set, nested ones too: _snake leaves those out.)
    typed = [(m["__typename"], _snake(m)) for m in plain.messages[middle + 1 :]]
    assert [(m["__typename"], _snake(m)) for m in rest.messages] == typed
    assert end.messages == []
    print(f"a game of {len(plain.messages)} messages followed in {game_seconds:.1f} s")


# -- Chromium: a page's own WebSocket, authenticated with a stream ticket ----------------------------

PAGE_SCRIPT = """
({ url, ticket, table, other, query }) => {
  const log = (window.hearts = { protocol: null, frames: [], closes: [], bad: null });
  const send = (socket, message) => socket.send(JSON.stringify(message));
  const socket = new WebSocket(url, "graphql-transport-ws");
  socket.onopen = () => {
    log.protocol = socket.protocol;
    send(socket, { type: "connection_init", payload: { ticket } });
  };
  socket.onmessage = (e) => {
    const message = JSON.parse(e.data);
    log.frames.push(message);
    if (message.type === "ping") send(socket, { type: "pong" });
    if (message.type !== "connection_ack") return;
    send(socket, { id: "table", type: "subscribe", payload: { query, variables: { tableId: table } } });
    // The same ticket, for another table's events, for the player stream, for a query: refused.
    send(socket, { id: "other", type: "subscribe", payload: { query, variables: { tableId: other } } });
    send(socket, { id: "mine", type: "subscribe", payload: { query: "subscription { myEvents { id } }" } });
    send(socket, { id: "query", type: "subscribe", payload: { query: "{ me { __typename } }" } });
  };
  socket.onclose = (e) => log.closes.push({ code: e.code, reason: e.reason });
  // A ticket the server never issued: the connection is refused with 4403.
  const bad = new WebSocket(url, "graphql-transport-ws");
  bad.onopen = () => send(bad, { type: "connection_init", payload: { ticket: "not-a-ticket" } });
  bad.onclose = (e) => { log.bad = { code: e.code, reason: e.reason }; };
}
"""


def _frames(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate("window.hearts.frames"))


def _errors_of(frames: list[dict[str, Any]], op_id: str) -> list[dict[str, Any]]:
    """The errors the server answered operation `op_id` (as `error`, or `next` with errors)."""
    out: list[dict[str, Any]] = []
    for frame in frames:
        if frame.get("id") != op_id:
            continue
        if frame["type"] == "error":
            out += frame["payload"]
        elif frame["type"] == "next":
            out += frame["payload"].get("errors") or []
    return out


def test_a_browser_page_follows_a_table_with_a_stream_ticket(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    base = web()
    _, key = app_create(name="browser")
    auth = {"Authorization": f"Bearer {key}"}
    table_id = _bot_table(base, key, {"hands": 1})
    other = _bot_table(base, key, {"hands": 1})
    r = httpx.post(f"{base}/api/v1/tables/{table_id}/stream-tickets", headers=auth)
    assert r.status_code == 201, r.text
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(f"{base}/healthz")  # a page of the server's origin
            args = {
                "url": base.replace("http://", "ws://") + "/graphql/",
                "ticket": r.json()["ticket"],
                "table": table_id,
                "other": other,
                "query": _document(),
            }
            page.evaluate(PAGE_SCRIPT, args)

            def first_state() -> bool:
                return any(f.get("id") == "table" and f["type"] == "next" for f in _frames(page))

            _until(first_state, "the table's first message in the page")
            workers()  # the bots play from now on
            started = time.monotonic()
            _until(
                lambda: any(f.get("id") == "table" and f["type"] == "complete" for f in _frames(page)),
                "the end of the table's subscription in the page",
                GAME_SECONDS,
            )
            game_seconds = time.monotonic() - started
            _until(lambda: page.evaluate("window.hearts.bad") is not None, "the bad ticket's close")
            frames, protocol, bad, closes = page.evaluate(
                "[window.hearts.frames, window.hearts.protocol, window.hearts.bad, window.hearts.closes]"
            )
        finally:
            browser.close()
    assert not problems, problems
    assert protocol == "graphql-transport-ws"
    assert frames[0] == {"type": "connection_ack"}
    assert closes == [], closes  # the refusals are per operation: the socket stays open
    # Another table's events, the player's stream and a query: refused with the ticket, each alone.
    refused = {"other": "ticket_invalid", "mine": "ticket_invalid", "query": "permission_denied"}
    for op_id, code in refused.items():
        errors = _errors_of(frames, op_id)
        assert [e["extensions"]["code"] for e in errors] == [code], (op_id, errors)
        answered = [f for f in frames if f.get("id") == op_id and f["type"] == "next"]
        assert not [f for f in answered if f["payload"].get("data")], answered
    assert bad["code"] == 4403 and bad["reason"].startswith("ticket_invalid"), bad
    # The ticket's table: its state, then exactly the app key's event log, ids of its stream, the end.
    table_frames = [f for f in frames if f.get("id") == "table"]
    assert table_frames[-1] == {"id": "table", "type": "complete"}
    assert all(f["type"] == "next" and "errors" not in f["payload"] for f in table_frames[:-1])
    messages = [f["payload"]["data"]["tableEvents"] for f in table_frames[:-1]]
    _check_exactly_the_log("chromium", messages, base, table_id, auth)
    print(f"a hand of {len(messages)} messages followed in the page in {game_seconds:.1f} s")
