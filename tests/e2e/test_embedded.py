"""The run command's embedded arrangement: with no Redis and no database server, a real server
process still plays bots and enforces turn clocks."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {token}"} if token else {}),
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _stream(url: str, token: str, after: int) -> list[dict[str, Any]]:
    """The events of an NDJSON stream from `after` until it has been quiet for a second."""
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Last-Event-ID": str(after)}
    )
    events: list[dict[str, Any]] = []
    with urllib.request.urlopen(request, timeout=2) as response:
        try:
            for line in response:
                events.append(json.loads(line))
        except TimeoutError:  # quiet: everything so far has arrived
            pass
    return events


def test_without_redis_the_server_plays_bots_and_enforces_clocks(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CI")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'embedded.sqlite3'}"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    port = _free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "hearts_service.asgi:application"),
            *("--port", str(port), "--lifespan", "off", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env={**env, "HEARTS_EMBEDDED_WORKER": "1"},  # what `make run` sets
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        for _ in range(100):
            try:
                token = _call(base, "POST", "/guests", {"name": "solo"})["token"]
                break
            except OSError:
                time.sleep(0.1)
        table = _call(
            base,
            "POST",
            "/tables",
            {"options": {}, "bots": {"1": "basic", "2": "basic", "3": "basic"}, "clocks": {"pass": 5}},
            token,
        )
        _call(base, "POST", f"/tables/{table['id']}/join", {}, token)
        for _ in range(30):  # the bots pass on the embedded worker's people lane, after the answer
            joined = _call(base, "GET", f"/tables/{table['id']}", None, token)
            if joined["game"]["passed"] == [False, True, True, True]:
                break
            time.sleep(0.1)
        assert joined["game"]["passed"] == [False, True, True, True]  # the bots passed after the start
        # Nobody reads or writes the table now: only the embedded sweep can act when the pass
        # clock runs out; then the bots play on until it is the person's turn.
        # (The database is read directly: an API read of an overdue table would itself act.)
        time.sleep(7)
        with sqlite3.connect(tmp_path / "embedded.sqlite3") as db:
            kinds = db.execute(
                "SELECT kind, position FROM games_move WHERE table_id = ? AND seq > ? ORDER BY seq",
                (table["id"], joined["version"]),
            ).fetchall()
        assert ("pass", 0) in kinds  # made by the server for the absent person (then the bots
        # play on, unless the person now holds the two of clubs and leads)
        # The stream works without Redis too (it polls): from the version seen before the
        # timeout, the person's stream shows the pass the server made for them.
        stream = _stream(f"{base}/tables/{table['id']}/stream?format=ndjson", token, joined["version"])
        assert any(e["type"] == "turn_timed_out" and e["seat"] == 0 for e in stream)
        assert any(e["type"] == "cards_received" and e["seat"] == 0 for e in stream)
    finally:
        server.terminate()
        server.wait(10)
