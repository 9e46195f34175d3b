"""The web's CPU per request: request threads kept (the default) against a new thread per request,
and the synchronous middleware chain (the default) against Django's ASGI handler.

    python bench/requests.py                  # 5 rounds of 2,000 requests per server
    BENCH_ROUNDS=1 BENCH_PLAYS=5 python bench/requests.py    # a smoke run

Starts three `make run` servers (uvicorn, SQLite in a temporary directory, no Redis; REDIS_URL and
DATABASE_URL of the environment are ignored): the defaults; WEB_KEEP_REQUEST_THREADS false; and
WEB_SYNC_CHAIN false (hearts_service/asgi.py). It creates a guest and a table on each, then
alternates rounds of BENCH_PLAYS x 20 `GET tables/{id}` (authenticated, answered from the database)
between them, one client request at a time, and reads each server's CPU time from /proc. Figures
(`name: value`, medians of the rounds):

- request_cpu_us_kept, request_cpu_us_new_thread: the server's CPU microseconds per request
- request_kept_vs_new_thread_ratio: the first over the second, round by round
- request_cpu_us_django_chain: the same with Django's ASGI handler
- request_sync_chain_vs_django_chain_ratio: the defaults' over that, round by round
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
REQUESTS = int(os.environ.get("BENCH_PLAYS", "100")) * 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One `make run` server (without the embedded worker: nothing here needs bots or clocks)."""

    def __init__(self, workdir: Path, keep_threads: bool, sync_chain: bool = True) -> None:
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env |= {
            "DATABASE_URL": f"sqlite:///{workdir / f'{keep_threads}-{sync_chain}.sqlite3'}",
            "LOG_LEVEL": "WARNING",
            "RATE_LIMITS_ENABLED": "false",  # one client, thousands of reads a minute
            "WEB_KEEP_REQUEST_THREADS": str(keep_threads).lower(),
            "WEB_SYNC_CHAIN": str(sync_chain).lower(),
        }
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        port = _free_port()
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--port", str(port)),
                *("--lifespan", "off", "--log-level", "warning"),
            ],
            cwd=ROOT,
            env=env,
        )
        self.base = f"http://127.0.0.1:{port}"
        self.client = httpx.Client(base_url=self.base, timeout=30)
        for _ in range(300):
            try:
                self.client.get("/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        token = self.client.post("/api/v1/guests", json={"name": "bench"}).json()["token"]
        self.client.headers["Authorization"] = f"Bearer {token}"
        self.table = self.client.post("/api/v1/tables", json={}).json()["id"]
        self.round(200)  # warm: imports, caches, the first threads

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def round(self, n: int) -> float:
        """CPU microseconds per request over `n` table reads."""
        start = self.cpu_seconds()
        for _ in range(n):
            answer = self.client.get(f"/api/v1/tables/{self.table}")
            answer.raise_for_status()
        return (self.cpu_seconds() - start) / n * 1e6

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(10)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        servers = [Server(Path(folder), True), Server(Path(folder), False), Server(Path(folder), True, False)]
        try:
            rounds = [[server.round(REQUESTS) for server in servers] for _ in range(ROUNDS)]
        finally:
            for server in servers:
                server.stop()
    print(f"request_cpu_us_kept: {statistics.median(k for k, _, _ in rounds):.0f}")
    print(f"request_cpu_us_new_thread: {statistics.median(n for _, n, _ in rounds):.0f}")
    print(f"request_kept_vs_new_thread_ratio: {statistics.median(k / n for k, n, _ in rounds):.2f}")
    print(f"request_cpu_us_django_chain: {statistics.median(d for _, _, d in rounds):.0f}")
    print(f"request_sync_chain_vs_django_chain_ratio: {statistics.median(k / d for k, _, d in rounds):.2f}")


if __name__ == "__main__":
    main()
