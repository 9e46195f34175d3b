"""The TypeScript SDK (clients/typescript): its version is the API's, its types are those generated from
the live OpenAPI document, it compiles with `tsc --strict`, and its compiled bot plays a whole game on
a live server, resuming its stream after the connection is cut."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from games.models import Move
from games.models import Table as TableRow
from tests.bots.test_bot_client import Proxy
from tests.node_modules_cache import node_modules, node_tools

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "clients" / "typescript"
REGENERATE = "regenerate it: `cd clients/typescript && npm ci && npm run generate:local`"


def _tools() -> tuple[str, str]:
    return node_tools("the TypeScript SDK's tests need Node.js 20")


def _node_modules(npm: str) -> Path:
    return node_modules(npm, TS, "hearts-client-ts")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK and its example compiled with `tsc --strict` in a build directory of their own."""
    node, npm = _tools()
    modules = _node_modules(npm)
    build = tmp_path_factory.mktemp("typescript")
    for name in ("src", "examples", "test"):
        shutil.copytree(TS / name, build / name)
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(TS / name, build / name)
    (build / "node_modules").symlink_to(modules, target_is_directory=True)
    tsc = [node, str(build / "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json", "--strict"]
    result = subprocess.run(tsc, cwd=build, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return build


def test_package_version_is_the_api_version() -> None:
    package = json.loads((TS / "package.json").read_text())
    lock = json.loads((TS / "package-lock.json").read_text())
    index = (TS / "src" / "index.ts").read_text()
    version = settings.SPECTACULAR_SETTINGS["VERSION"]
    assert package["version"] == lock["version"] == version
    assert f'export const VERSION = "{version}";' in index
    # Pinned tools: an exact version for each, as the lockfile installs it.
    assert all(v[0].isdigit() for v in package["devDependencies"].values()), package["devDependencies"]


@pytest.mark.slow
def test_compiles_under_strict(built: Path) -> None:
    for name in ("src/index.js", "src/index.d.ts", "examples/play.js", "test/client.test.js"):
        assert (built / "dist" / name).is_file(), name


@pytest.mark.slow
def test_retry_and_stream_rules_on_a_scripted_fetch(built: Path) -> None:
    """clients/typescript/test/client.test.ts under node's test runner: keys reused on retries,
    Retry-After honoured, stale_version raised for actions and retried for joins, attempts bounded,
    a stream resumed with Last-Event-ID after a drop."""
    node, _ = _tools()
    result = subprocess.run(
        [node, "--test", "dist/test/"], cwd=built, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tests = (TS / "test" / "client.test.ts").read_text().count('\ntest("')
    assert "# fail 0" in result.stdout and f"# pass {tests}\n" in result.stdout, result.stdout


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_types_are_generated_from_the_live_document(
    built: Path, web: Callable[..., str], tmp_path: Path
) -> None:
    """src/schema.d.ts is exactly what openapi-typescript makes of the served OpenAPI document: a
    change of the API that is not regenerated fails here."""
    node, _ = _tools()
    document = httpx.get(web() + "/api/schema/?format=json", timeout=30)
    assert document.status_code == 200
    (tmp_path / "openapi.json").write_bytes(document.content)
    cli = [
        node,
        str(built / "node_modules/openapi-typescript/bin/cli.js"),
        "openapi.json",
        "-o",
        "schema.d.ts",
    ]
    result = subprocess.run(cli, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    generated = (tmp_path / "schema.d.ts").read_text()
    assert generated == (TS / "src" / "schema.d.ts").read_text(), (
        f"clients/typescript/src/schema.d.ts is stale: {REGENERATE}"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_compiled_bot_plays_a_whole_game(
    built: Path, web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    """node runs the compiled example: a Bot on the TypeScript client plays seat 0 against three
    server bots to the end of the game, through a relay whose connections are cut mid-game."""
    node, _ = _tools()
    workers()
    proxy = Proxy(web())
    log = tmp_path / "play.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [node, "dist/examples/play.js", proxy.base], cwd=built, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 240
        while Move.objects.filter(kind="play", position=0).count() < 5:  # the table is the test's only one
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no plays"
            time.sleep(0.1)
        proxy.cut()  # the stream (and any request in flight) is cut: the client resumes
        proc.wait(max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proxy.close()
    output = log.read_text()
    assert proc.returncode == 0, output
    result = json.loads(output.strip().splitlines()[-1])
    assert result["status"] == "finished" and len(result["totals"]) == 4
    assert result["me"] == "guest" and result["ticket"] == 200  # a ticket opens the stream, no header
    assert result["export"]["format"] == "hearts-game/1" and result["export"]["totals"] == result["totals"]
    assert result["transcript"] > 0
    assert result["reconnects"] >= 1
    assert result["seen"]["state"] == 1 and result["seen"]["table_finished"] == 1
    assert result["seen"]["your_turn"] >= 13
    table = TableRow.objects.get(pk=result["table"])
    last = table.score_rows.filter(hand_number=table.hand_number).order_by("position")
    assert table.status == TableRow.Status.FINISHED and [r.total for r in last] == result["totals"]
    mine = Move.objects.filter(table_id=table.pk, position=0, kind__in=["pass", "play", "moon"])
    assert mine.filter(kind="play").count() == 13 * table.hand_number == 13 * result["export"]["hands"]
    assert all(m.idempotency_key == f"bot-{table.pk}-0-{m.seq - 1}" for m in mine if m.kind == "play")


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_compiled_bot_plays_a_whole_game_over_one_socket(
    built: Path, web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    """node runs the compiled example with `--socket`: the Bot plays seat 0 over one WebSocket on the
    `graphql-ws` npm client (with `ws` as Node 20's WebSocket): the joinTable and submitAction
    mutations, the table query and the tableEvents subscription, through a relay cut twice
    mid-game. graphql-ws reconnects and the subscription resumes with `after`: the events it
    received are exactly the SSE stream's for the same seat, the same ids in order, none twice."""
    node, _ = _tools()
    workers()
    base = web()
    proxy = Proxy(base)
    log = tmp_path / "socket.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [node, "dist/examples/play.js", proxy.base, "--socket"],
            cwd=built,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 240
        for plays in (5, 20):
            while Move.objects.filter(kind="play", position=0).count() < plays:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "no plays"
                time.sleep(0.1)
            proxy.cut()  # the socket (and any operation in flight) is cut: graphql-ws reconnects
        proc.wait(max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proxy.close()
    output = log.read_text()
    assert proc.returncode == 0, output
    result = json.loads(output.strip().splitlines()[-1])
    assert result["socket"] is True and result["status"] == "finished" and len(result["totals"]) == 4
    assert result["reconnects"] >= 2
    assert result["seen"]["state"] == 1 and result["seen"]["table_finished"] == 1
    assert result["seen"]["your_turn"] >= 13
    events = result["events"]
    assert events[0][0] == "state"
    logged = [event_id for kind, event_id in events if kind not in ("state", "your_turn")]
    headers = {"Authorization": f"Bearer {result['token']}", "Last-Event-ID": events[0][1]}
    url = f"{base}/api/v1/tables/{result['table']}/stream?format=ndjson"
    with httpx.stream("GET", url, headers=headers, timeout=60) as response:
        stream = [json.loads(line)["id"] for line in response.iter_lines() if line]
    assert logged == stream and len(set(logged)) == len(logged)
    table = TableRow.objects.get(pk=result["table"])
    mine = Move.objects.filter(table_id=table.pk, position=0, kind__in=["pass", "play", "moon"])
    assert mine.filter(kind="play").count() == 13 * table.hand_number  # nothing acted twice
    assert all(m.idempotency_key == f"bot-{table.pk}-0-{m.seq - 1}" for m in mine if m.kind == "play")


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_socket_example_of_the_docs_compiles_and_runs(
    built: Path, web: Callable[..., str], workers: Callable[..., object]
) -> None:
    """docs/clients.md's TypeScript example over one socket, as written (importing the package from
    its source), compiles under `tsc --strict` and plays its one-hand game to `table_finished`."""
    node, _ = _tools()
    workers()
    base = web()
    text = (ROOT / "docs" / "clients.md").read_text().split("### Subscriptions over one socket", 1)[1]
    example = text.split("```ts\n", 1)[1].split("```", 1)[0]
    example = example.replace('"hearts-client"', '"../src/index.js"').replace("http://localhost:8000", base)
    (built / "examples" / "docs_socket.ts").write_text(example)
    tsc = [node, str(built / "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json", "--strict"]
    result = subprocess.run(tsc, cwd=built, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    run = subprocess.run(
        [node, "dist/examples/docs_socket.js"], cwd=built, capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("table_finished"), run.stdout
