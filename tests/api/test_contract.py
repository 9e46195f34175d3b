"""The REST contract as integrators meet it: the OpenAPI document validates without a warning,
openapi-python-client generates a client from it without a warning and that client plays against a
live server, and the types openapi-typescript generates compile a small program under `tsc --strict`."""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
# The integrators' tools, pinned (the same versions as clients/typescript).
OPENAPI_TYPESCRIPT = "7.13.0"
TYPESCRIPT = "5.9.3"
PACKAGE = "hearts_contract_client"  # the generated Python package's name

pytestmark = pytest.mark.slow  # outside tools and a live server: not in `make test-fast`


SPECTACULAR = [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn"]


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OpenAPI document as `manage.py spectacular --validate --fail-on-warn` writes it: a
    warning (an unnamed enum, a field it cannot type, an invalid document) fails here."""
    out = tmp_path_factory.mktemp("openapi") / "openapi.json"
    result = subprocess.run(
        [*SPECTACULAR, "--format", "openapi-json", "--file", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    return out


def _generated_client(document: Path, into: Path) -> Any:
    """The package openapi-python-client generates from the document (no warning allowed)."""
    config = into / "config.yaml"
    config.write_text(f"package_name_override: {PACKAGE}\npost_hooks: []\n")
    cli = Path(sys.executable).with_name("openapi-python-client")
    out = ["--output-path", str(into / PACKAGE)]
    result = subprocess.run(
        [str(cli), "generate", "--path", str(document), "--meta", "none", "--config", str(config), *out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower(), output
    sys.path.insert(0, str(into))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(into))


def test_a_generated_python_client_plays_against_a_live_server(
    document: Path, web: Callable[..., str], tmp_path: Path
) -> None:
    """A guest creates a table with options, clocks and a bot, seats another bot, sits down,
    starts, passes, and reads the table, its events and a refusal: every answer is parsed into
    the generated models (typed events by `type`, errors with their code and fields)."""
    _generated_client(document, tmp_path)

    def load(name: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.{name}")

    api, models = (
        {
            op: load(f"api.{tag}.{op}")
            for tag, op in [
                ("players", "create_guest"),
                ("tables", "create_table"),
                ("tables", "get_table"),
                ("play", "add_bot"),
                ("play", "join_table"),
                ("play", "start_table"),
                ("play", "submit_action"),
                ("history", "list_table_events"),
                ("streams", "stream_table_events"),
            ]
        },
        load("models"),
    )
    client_module = load("client")
    base = web()

    guest = api["create_guest"].sync(
        client=client_module.Client(base_url=base), body=models.CreateGuestRequest(name="Ada")
    )
    assert isinstance(guest, models.PlayerTokenOut), guest
    client = client_module.AuthenticatedClient(base_url=base, token=guest.token)

    refused = api["create_table"].sync(
        client=client, body=models.CreateTableRequest(options=models.TableOptionsRequest(target_score=49))
    )
    assert isinstance(refused, models.ErrorOut)
    assert (refused.code, refused.option) == (models.ErrorCode.INVALID_OPTION, "target_score")

    body = models.CreateTableRequest(
        options=models.TableOptionsRequest(target_score=50, variant=models.VariantEnum.OMNIBUS),
        clocks=models.ClocksRequest(play=20, pass_=None),
        bots=models.CreateTableRequestBots.from_dict({"1": "basic"}),
    )
    table = api["create_table"].sync(client=client, body=body, idempotency_key="contract-1")
    assert isinstance(table, models.TableOut), table
    assert table.options.variant == models.VariantEnum.OMNIBUS and table.clocks.pass_ is None
    table = api["add_bot"].sync(
        table_id=table.id,
        client=client,
        body=models.AddBotRequest(level=models.BotLevelEnum.STRONG, position=2),
        if_match=str(table.version),
    )
    assert isinstance(table, models.TableOut), table
    table = api["join_table"].sync(table_id=table.id, client=client, body=models.JoinTableRequest())
    table = api["start_table"].sync(table_id=table.id, client=client, body=models.StartTableRequest())
    assert isinstance(table, models.TableOut) and table.game is not None, table

    seen = api["get_table"].sync(table_id=table.id, client=client)
    assert isinstance(seen, models.TableOut) and seen.your_seat == 0
    unchanged = api["get_table"].sync_detailed(
        table_id=table.id, client=client, if_none_match=f'W/"{seen.version}"'
    )
    assert unchanged.status_code == 304 and unchanged.headers["ETag"] == f'W/"{seen.version}"'
    legal = seen.game.legal_actions
    assert legal.type_ == models.LegalOutTypeEnum.PASS
    stale = api["submit_action"].sync_detailed(
        table_id=table.id,
        client=client,
        body=models.PlayActionRequest(type_=models.PlayActionTypeEnum.PLAY, card=legal.from_[0]),
        if_match=str(seen.version - 1),
    )
    assert stale.status_code == 409 and stale.parsed.code == models.ErrorCode.STALE_VERSION
    assert stale.parsed.version == seen.version  # a structured field of the error, typed
    passed = api["submit_action"].sync(
        table_id=table.id,
        client=client,
        body=models.PassActionRequest(type_=models.PassActionTypeEnum.PASS, cards=legal.from_[:3]),
        idempotency_key="contract-pass",
    )
    assert isinstance(passed, models.TableOut) and passed.game.my_pass is not None, passed

    events = api["list_table_events"].sync(table_id=table.id, client=client, after=0)
    assert isinstance(events, models.EventsOut)
    kinds = {type(e).__name__ for e in events.events}
    assert {"EventBotAdded", "EventSeatTaken", "EventGameStarted", "EventCardsDealt"} <= kinds, kinds
    dealt = next(e for e in events.events if isinstance(e, models.EventCardsDealt))
    assert dealt.seat == 0 and len(dealt.cards) == 13

    missing = api["get_table"].sync_detailed(table_id=10**17, client=client)
    assert missing.status_code == 404 and missing.parsed.code == models.ErrorCode.NOT_FOUND

    # A stream is text: the generated call's request, read line by line, never parsed whole.
    request = api["stream_table_events"]._get_kwargs(table.id, format_=models.StreamTableEventsFormat.NDJSON)
    with client.get_httpx_client().stream(**request, timeout=10) as response:
        assert response.headers["content-type"].startswith("application/x-ndjson")
        first = json.loads(next(response.iter_lines()))
    state = models.EventState.from_dict(first)
    assert state.state.id == table.id


def _node_tools() -> tuple[str, Path]:
    """node, and a node_modules holding the pinned openapi-typescript and typescript, installed once
    into HEARTS_CONTRACT_NODE_DIR (by default a directory of the user's cache)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        skip_or_fail("node and npm are not installed (the TypeScript contract test needs Node.js 20)")
    assert node is not None and npm is not None
    configured = os.environ.get("HEARTS_CONTRACT_NODE_DIR")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = Path(configured) if configured else cache / "hearts-contract-node"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"openapi-typescript-{OPENAPI_TYPESCRIPT}-typescript-{TYPESCRIPT}"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "node_modules" / "typescript").is_dir():
            target.mkdir(exist_ok=True)
            package = {
                "private": True,
                "devDependencies": {"openapi-typescript": OPENAPI_TYPESCRIPT, "typescript": TYPESCRIPT},
            }
            (target / "package.json").write_text(json.dumps(package))
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=target,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert result.returncode == 0, result.stdout + result.stderr
    return node, target / "node_modules"


# A program against the generated types: it compiles only if the document types bodies, events and
# errors as a client needs them (each @ts-expect-error line must be an error, or tsc fails).
PROGRAM = """
import type { components, operations } from "./api";

type Schemas = components["schemas"];
type Action = Schemas["ActionRequest"];
type StreamEvent = Schemas["StreamEvent"];
type ErrorCode = Schemas["ErrorCode"];
type Json<T extends { content: { "application/json": unknown } }> = T["content"]["application/json"];

export const pass: Action = { type: "pass", cards: ["QS", "AH", "KH"] };
export const play: Action = { type: "play", card: "2C" };
export const moon: Action = { type: "moon", choice: "add" };
// @ts-expect-error a play names one card, not cards
export const mixed: Action = { type: "play", cards: ["2C"] };
// @ts-expect-error a moon choice is subtract or add
export const badMoon: Action = { type: "moon", choice: "double" };

export function describe(event: StreamEvent): string {
  switch (event.type) {
    case "card_played":
      return `seat ${event.seat} played ${event.card}`;
    case "trick_won":
      return `seat ${event.seat} took ${event.points} points`;
    case "hand_scored":
      return event.moon === null || event.moon === undefined ? "no moon" : event.moon.choice;
    case "your_turn":
      return event.legal_actions.type;
    case "state":
      return event.state.status;
    default:
      return event.type;
  }
}

export function listed(events: Json<operations["listTableEvents"]["responses"][200]>["events"]): number[] {
  return events.map((event) => event.seq);
}

type CreateTable = NonNullable<operations["createTable"]["requestBody"]>["content"]["application/json"];
export const table: CreateTable = {
  options: { target_score: 50, variant: "cancellation", players: 6, tie_rule: "shared" },
  clocks: { pass: 60, play: null, away_after: 3 },
  bots: { "1": "expert", "2": "random" },
};
// @ts-expect-error not a variant
export const badVariant: CreateTable = { options: { variant: "spades" } };
export const broughtBot: CreateTable = { bots: { "1": "ext:my-bot" } };
// @ts-expect-error a bot level is a string
export const badBot: CreateTable = { bots: { "1": 3 } };

export const code: ErrorCode = "stale_version";
// @ts-expect-error not an error code
export const badCode: ErrorCode = "no_such_code";
export function retryIn(limited: Json<operations["submitAction"]["responses"][429]>): number {
  return limited.retry_after;
}
type Conflict = Json<operations["submitAction"]["responses"][409]>;
export function currentVersion(conflict: Conflict): number | undefined {
  return conflict.version;
}
export const stream: operations["streamTableEvents"]["responses"][200]["content"]["text/event-stream"] =
  "id: 7:0\\nevent: card_played\\ndata: {}\\n\\n";
"""


def test_typescript_types_of_the_document_compile_a_strict_program(document: Path, tmp_path: Path) -> None:
    """openapi-typescript makes types of the document without a warning, and a program using them
    compiles under `tsc --strict` (with the mistakes it marks refused)."""
    node, modules = _node_tools()
    result = subprocess.run(
        [node, str(modules / "openapi-typescript/bin/cli.js"), str(document), "-o", "api.d.ts"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warn" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    (tmp_path / "program.ts").write_text(PROGRAM)
    tsc = [node, str(modules / "typescript/bin/tsc"), "--strict", "--noEmit", "--target", "es2020"]
    result = subprocess.run(
        [*tsc, "--module", "es2020", "--moduleResolution", "bundler", "program.ts"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_served_document_is_the_dumped_one(document: Path, db: None) -> None:
    """What `manage.py spectacular` writes (and generators read) is what /api/schema/ serves."""
    from django.test import Client

    served = Client().get("/api/schema/?format=json")
    assert served.status_code == 200
    assert json.loads(served.content) == json.loads(document.read_text())
