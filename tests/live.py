"""Fixtures of every test folder (a plugin of tests/conftest.py): after every database test, each
table it finished must replay from its seed and move log exactly; the fixtures that start real
processes (Celery workers, ASGI web servers) on the test database; and a player's bearer token for
requests sent straight to the WSGI app (schemathesis). The service's modules are imported inside
the fixtures: `make test-compiled` loads this plugin without Django (tests/engine needs none)."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.conftest import REPLAYED_TABLES, celery_eager

# The WebSocket flags of uvicorn, as deployed (Makefile, deploy/Dockerfile; tests/deploy/test_deploy.py holds
# them equal): a dead peer is found within 20 s; no permessage-deflate (compressing each small event
# was a third of the event loop's time with 2,000 subscriptions); the websockets library's own
# implementation, whose pings cost a fraction of uvicorn's sans-I/O one's (p99 delivery 21 ms against
# 97 ms with 2,000 subscriptions: bench/HISTORY.md, subscriptions.py).
WS_FLAG_LINE = "--ws websockets --ws-ping-interval 10 --ws-ping-timeout 5 --ws-per-message-deflate false"
WS_FLAGS = WS_FLAG_LINE.split()
GAME_LANES = "clocks,people,bots,bulk"  # every lane but webhooks and push: one worker for the game's tasks

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def finished_tables_replay_exactly(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        yield
        return
    from games.engine import state_to_dict
    from games.models import Table
    from games.records import log as records
    from games.services import table_replay

    # Requested here so that the database is torn down after this check, not before it.
    request.getfixturevalue("transactional_db" if marker.kwargs.get("transaction") else "db")
    yield
    for table in Table.objects.filter(status=Table.Status.FINISHED):
        replayed = table_replay(table)
        assert replayed is not None, f"table {table.pk} has no start in its log"
        # A sealed or archived table keeps no state when the replay gives it back (games.records).
        stored = table.state if table.state is not None else state_to_dict(records.state(table))
        assert state_to_dict(replayed) == stored, f"table {table.pk} does not replay"
        last = [r for r in records.score_rows(table) if r.hand_number == table.hand_number]
        assert [r.total for r in last] == replayed.totals
        REPLAYED_TABLES.append(table.pk)


@pytest.fixture
def bearer(db: None) -> Iterator[dict[str, str]]:
    """A player token of an app, so that schemathesis' requests get past authentication. Requests
    go straight to the WSGI app, so, as Django's test client does, the end of a request must
    not close the connection that holds the test's transaction."""
    from django.core import signals
    from django.db import close_old_connections

    from games.accounts import app_create, player_create

    app, _ = app_create(name="schemathesis")
    _, token = player_create(app=app, name="fuzz")
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield {"Authorization": f"Bearer {token}"}
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _test_db_env(redis_url: str) -> dict[str, str]:
    """The environment of a process started by a test: the test database and the run's Redis."""
    from django.db import connection

    db = connection.settings_dict
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{host}/{db['NAME']}",
        "REDIS_URL": redis_url,
    }


def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A process in its own session (so that its children are stopped with it), logging to `log`."""
    out = open(log, "wb")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(procs: list[subprocess.Popen[bytes]], *, graceful: bool) -> None:
    """Stop every process still running: SIGTERM first when `graceful`, SIGKILL otherwise or after 10 s."""
    for proc in procs:
        if proc.poll() is not None:
            continue
        if graceful:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
                continue
            except subprocess.TimeoutExpired:
                pass
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def workers(redis_url: str, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start real `celery worker` processes on the test database and the test run's Redis:
    `workers(queues="clocks,people,bots,webhooks", beat=True, SOME_SETTING="1")`; every one still
    running is killed at the end. The queues are emptied first: nothing is left over from another run."""
    from games.infra import jobs
    from hearts_service.celery import app

    base_env = {**_test_db_env(redis_url), "SWEEP_SECONDS": "1"}
    celery_eager(False)
    app.control.purge()
    with app.connection_for_write() as conn:
        for queue in [
            jobs.CLOCKS_QUEUE,
            jobs.PEOPLE_QUEUE,
            jobs.WEBHOOKS_QUEUE,
            jobs.PUSH_QUEUE,
            jobs.BULK_QUEUE,
            *jobs.bot_queues(),
        ]:
            conn.default_channel.queue_purge(queue)
    started: list[subprocess.Popen[bytes]] = []

    def start(*, queues: str = GAME_LANES, beat: bool = False, **env: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "celery", "-A", "hearts_service", "worker", "--concurrency=1"]
        name = f"w{len(started)}{os.environ.get('PYTEST_XDIST_WORKER', '')}@%h"  # unique on this host
        cmd += ["-Q", queues, "-n", name, "-l", "info"]
        if beat:
            cmd += ["-B", "-s", str(tmp_path / "beat-schedule")]
        proc = _spawn(cmd, {**base_env, **env}, tmp_path / f"worker{len(started)}.log")
        started.append(proc)
        return proc

    yield start
    _stop(started, graceful=False)
    celery_eager(True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def web(redis_url: str, tmp_path: Path, transactional_db: None) -> Iterator[Callable[..., str]]:
    """Start real ASGI web servers (uvicorn, as deployed) on the test database and Redis;
    `web(**env)` returns the new server's base URL; all are stopped at the end."""
    base_env = _test_db_env(redis_url)
    started: list[subprocess.Popen[bytes]] = []
    # Every test's servers count from fresh rate-limit windows: the counters live in the shared
    # Redis, and the tests before (all from 127.0.0.1) may have used up this minute's allowance.
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter("hearts:rl:*"):
        client.delete(key)
    client.close()

    def start(**env: str) -> str:
        port = _free_port()
        log = tmp_path / f"web{len(started)}.log"
        cmd = [sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)]
        proc = _spawn([*cmd, "--lifespan", "off", *WS_FLAGS], {**base_env, **env}, log)
        started.append(proc)
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                httpx.get(base + "/healthz", timeout=1)
                return base
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"the web server did not start: {log.read_text()}")

    yield start
    _stop(started, graceful=True)
