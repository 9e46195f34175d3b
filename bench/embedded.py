"""The embedded run (`make run`: SQLite, no Redis) as a client sees it: whole SDK bot games, and how
soon a table seating slow bots is answered.

    python bench/embedded.py                  # 3 games per client kind
    BENCH_GAMES=1 python bench/embedded.py    # a smoke run

Starts its own server as `make run` does (uvicorn, HEARTS_EMBEDDED_WORKER=1, SQLite in a temporary
directory, a free port; REDIS_URL and DATABASE_URL of the environment are ignored) and plays, with
the Python SDK's `Bot` (the `examples/bot_client.py` loop) at a table of three `basic` bots with
`bot_pace_ms` 0, BENCH_GAMES whole games each over REST and SSE, over one GraphQL WebSocket, and
with the async client (REST and SSE). Figures (`name: value`):

- sdk_game_rest_sse_s, sdk_game_socket_s, sdk_game_async_s: seconds per whole game (the median)
- create_four_strong_bots_answer_ms: POST tables with four `strong` bots at `bot_think_ms` 200 (the
  median of 5): the answer comes before any bot moved, the bots play on the server's bot lane
- create_table_answer_ms: POST tables without bots, the baseline in the same run (median of 5);
  healthz_ms the same for GET /healthz
- create_four_strong_bots_vs_bare_ratio: the first over the second (about 1: bots cost a request nothing)
- four_strong_bots_version_at_answer: the table's version in that answer (the bots' seats only)
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python"))

from hearts_client import AsyncHeartsClient, Bot, HeartsClient  # noqa: E402

GAMES = int(os.environ.get("BENCH_GAMES", "3"))
BASIC = {1: "basic", 2: "basic", 3: "basic"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`make run`'s server on a fresh SQLite database: migrated, then uvicorn with the embedded worker."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env |= {"DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}", "LOG_LEVEL": "WARNING"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    port = _free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)),
            *("--lifespan", "off", "--ws", "websockets", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env={**env, "HEARTS_EMBEDDED_WORKER": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return server, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.kill()
    raise SystemExit("the embedded server did not start")


def game(base: str, *, socket: bool) -> float:
    """Seconds for one whole game, from creating the table to its end, played by the SDK's Bot."""
    client = HeartsClient.as_guest(base, "bench")
    began = time.perf_counter()
    with client:
        table = client.tables.create(bots=BASIC, bot_pace_ms=0)
        ended = Bot().run(client, table["id"], 0, socket=socket)
    assert ended["status"] == "finished", ended["status"]
    return time.perf_counter() - began


async def agame(base: str) -> float:
    client = await AsyncHeartsClient.as_guest(base, "bench")
    began = time.perf_counter()
    async with client:
        table = await client.tables.create(bots=BASIC, bot_pace_ms=0)
        ended = await Bot().arun(client, table["id"], 0)
    assert ended["status"] == "finished", ended["status"]
    return time.perf_counter() - began


def answers(base: str) -> dict[str, Any]:
    """POST tables with four strong bots thinking 200 ms a move, against the bare baselines."""
    client = HeartsClient.as_guest(base, "bench")
    strong, bare, health, versions = [], [], [], []
    with client, httpx.Client() as http:
        for _ in range(5):
            began = time.perf_counter()
            http.get(f"{base}/healthz").raise_for_status()
            health.append(time.perf_counter() - began)
            began = time.perf_counter()
            client.tables.create()
            bare.append(time.perf_counter() - began)
            began = time.perf_counter()
            made = client.tables.create(bots=dict.fromkeys(range(4), "strong"), bot_think_ms=200)
            strong.append(time.perf_counter() - began)
            versions.append(made["version"])
    return {
        "create_four_strong_bots_answer_ms": statistics.median(strong) * 1000,
        "create_table_answer_ms": statistics.median(bare) * 1000,
        "healthz_ms": statistics.median(health) * 1000,
        "create_four_strong_bots_vs_bare_ratio": statistics.median(strong) / statistics.median(bare),
        "four_strong_bots_version_at_answer": max(versions),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hearts-embedded-") as tmp:
        server, base = start(Path(tmp))
        try:
            figures: dict[str, Any] = {"games_per_kind": GAMES}
            figures["sdk_game_rest_sse_s"] = statistics.median(game(base, socket=False) for _ in range(GAMES))
            figures["sdk_game_socket_s"] = statistics.median(game(base, socket=True) for _ in range(GAMES))
            figures["sdk_game_async_s"] = statistics.median(asyncio.run(agame(base)) for _ in range(GAMES))
            figures |= answers(base)
        finally:
            server.terminate()
            server.wait(10)
    for name, value in figures.items():
        print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}", flush=True)


if __name__ == "__main__":
    main()
