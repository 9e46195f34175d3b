"""The subscription examples of docs/graphql.md, copied as a newcomer would and run on `make run`'s
embedded server (SQLite, no Redis): each finishes in seconds and does what the docs say."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import WS_FLAGS

ROOT = Path(__file__).resolve().parents[2]


def _blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "graphql.md").read_text()
    section = text[text.index("## Subscriptions") : text.index("## GraphiQL")]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server as `make run` starts it, on a free port: the examples' localhost:8000 is replaced."""
    tmp = tmp_path_factory.mktemp("embedded")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CI")}
    env["DATABASE_URL"] = f"sqlite:///{tmp / 'db.sqlite3'}"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)]
    command += ["--lifespan", "off", *WS_FLAGS]
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        command, cwd=ROOT, env={**env, "HEARTS_EMBEDDED_WORKER": "1"}, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def test_the_python_example_subscribes_and_passes_on_the_same_socket(embedded: str, tmp_path: Path) -> None:
    (block,) = _blocks("python")
    script = tmp_path / "example.py"
    script.write_text(block.replace("localhost:8000", embedded))
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    lines = done.stdout.splitlines()
    assert lines[0].startswith("TableStateEvent ")
    assert any(line.startswith("YourTurnEvent ") for line in lines)
    assert "'passCards': {'table': {'version':" in lines[-1] and "'errors': []" in lines[-1], lines[-1]


def test_the_javascript_example_follows_a_table_with_a_ticket(embedded: str, tmp_path: Path) -> None:
    from tests.graphql.test_subscription_clients import _node_modules, _tools

    node, npm = _tools()  # skips without Node (fails under CI=true)
    (tmp_path / "node_modules").symlink_to(_node_modules(npm))  # graphql-ws and ws, as tests/node pins them
    (block,) = _blocks("js")
    script = tmp_path / "follow.mjs"
    script.write_text(block.replace("localhost:8000", embedded))
    started = time.monotonic()
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    assert "TableStateEvent" in done.stdout and "YourTurnEvent" in done.stdout, done.stdout
