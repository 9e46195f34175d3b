"""examples/bot_client.py (a bot on the Python SDK, clients/python), as a third-party bot author
would run it: two clients (each its own guest) and two server bots play a whole game on a real ASGI
server with a real Celery worker; one client's connections are cut mid-game (the SDK resumes its
stream with the last event id), the other is killed (SIGKILL) and started again, and no action is
applied twice."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from games.models import Move, Table

pytestmark = [
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120  # seconds for the whole game


class Proxy:
    """A TCP relay to the web server whose open connections the test can cut at once."""

    def __init__(self, base: str) -> None:
        self.upstream = ("127.0.0.1", int(base.rsplit(":", 1)[1]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                self._close(s)

    def _close(self, s: socket.socket) -> None:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()

    def cut(self) -> None:
        with self.lock:
            cut, self.open = self.open, []
        for s in cut:
            self._close(s)

    def close(self) -> None:
        self.listener.close()
        self.cut()


def _guest(base: str, name: str) -> str:
    return str(httpx.post(f"{base}/api/v1/guests", json={"name": name}).json()["token"])


def _client(
    base: str, token: str, table_id: int, seat: int, log: Path, *extra: str
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, str(ROOT / "examples" / "bot_client.py"), "--base", base, "--token", token]
    cmd += ["--table", str(table_id), "--seat", str(seat), *extra]
    out = open(log, "wb")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(predicate: Callable[[], bool], deadline: float, what: str) -> None:
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_two_bot_clients_finish_a_game_and_survive_a_kill(
    web: Callable[..., str], workers: Callable[..., object], tmp_path: Path
) -> None:
    workers()
    base = web()
    host = {"Authorization": f"Bearer {_guest(base, 'host')}"}
    body = {
        "options": {"target_score": 50},
        "bots": {"2": "basic", "3": "basic"},
        "clocks": {"pass": None, "play": None, "moon": None},  # only the clients act for seats 0 and 1
    }
    table_id = int(httpx.post(f"{base}/api/v1/tables", json=body, headers=host).json()["id"])
    ada, bob = _guest(base, "ada"), _guest(base, "bob")
    logs = [tmp_path / "ada.log", tmp_path / "bob.log", tmp_path / "ada-again.log"]
    deadline = time.monotonic() + LIMIT
    first = _client(base, ada, table_id, 0, logs[0])
    proxy = Proxy(base)  # bob's connections go through it
    second = _client(proxy.base, bob, table_id, 1, logs[1], "--strategy", "random", "--seed", "7")
    try:
        # In the first hand: cut bob's stream (and any request in flight); he resumes where he was.
        _wait_for(
            lambda: Move.objects.filter(table_id=table_id, kind="play").count() >= 20, deadline, "plays"
        )
        proxy.cut()
        # Mid-game, in the second hand: kill one client without warning, then start it again.
        _wait_for(lambda: Table.objects.get(pk=table_id).hand_number >= 2, deadline, "the second hand")
        _wait_for(
            lambda: Move.objects.filter(table_id=table_id, hand=2, kind="play").count() >= 10,
            deadline,
            "plays",
        )
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        time.sleep(1)  # the game waits for seat 0 meanwhile (no clock)
        again = _client(base, ada, table_id, 0, logs[2])
        for proc in (again, second):
            proc.wait(max(1, deadline - time.monotonic()))
    finally:
        for proc in (first, second, *(p for p in [locals().get("again")] if p is not None)):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        proxy.close()
    outputs = [log.read_text() for log in logs]
    assert first.returncode == -signal.SIGKILL
    assert (again.returncode, second.returncode) == (0, 0), "\n---\n".join(outputs)
    for output in outputs[1:]:
        assert f"table {table_id} finished: totals [" in output, output

    table = Table.objects.get(pk=table_id)
    assert table.status == Table.Status.FINISHED
    moves = list(Move.objects.filter(table_id=table_id).order_by("seq"))
    assert [m.seq for m in moves] == list(range(1, table.version + 1))  # no gap, nothing extra
    # No action applied twice: a card is played once per hand, 13 plays per seat per hand.
    plays: dict[int, list[str]] = defaultdict(list)
    for move in moves:
        if move.kind == Move.Kind.PLAY:
            plays[move.hand].append(str(move.payload["card"]))
    assert len(plays) == table.hand_number >= 2
    for cards in plays.values():
        assert len(cards) == len(set(cards)) == 52
    per_seat = Counter((m.hand, m.position) for m in moves if m.kind == Move.Kind.PLAY)
    assert set(per_seat.values()) == {13}
    # Every move of the clients carries the Bot helper's key: table, seat and the version it was
    # decided on (a pass may be accepted after other seats' passes, so only a play's version is
    # exactly the one before it).
    mine = [m for m in moves if m.position in (0, 1) and m.kind in ("pass", "play", "moon")]
    assert mine and all(m.idempotency_key.startswith(f"bot-{table_id}-{m.position}-") for m in mine)
    plays_of_clients = [m for m in mine if m.kind == "play"]
    assert all(m.idempotency_key == f"bot-{table_id}-{m.position}-{m.seq - 1}" for m in plays_of_clients)
    assert len({(m.position, m.idempotency_key) for m in mine}) == len(mine)
    # bob's stream was cut and resumed after the last event it had
    assert re.search(rf"stream tables/{table_id}/stream lost .*; resuming after \d+(:\d+)? ", outputs[1])
    # The restarted client played on after the kill.
    assert f"table {table_id} v" in outputs[2] and "'type': 'play'" in outputs[2]
