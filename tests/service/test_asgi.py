"""The web's ASGI application: a request other than an event stream is served in one hop from the
event loop to its thread (hearts_service.asgi.SyncChainHandler), its answer closed before it is sent."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from django.core.signals import request_finished, request_started

from hearts_service import asgi


class CountingExecutor(ThreadPoolExecutor):
    """A request thread that counts the work handed to it: one hand-off is one hop."""

    def __init__(self) -> None:
        super().__init__(1, thread_name_prefix="counted-request")
        self.hops = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.hops += 1
        return super().submit(fn, *args, **kwargs)


def _serve(path: str, body: bytes = b"", method: str = "GET") -> tuple[list[tuple[str, Any]], int]:
    """Serve one request through the ASGI application; what happened, in order, and the hops."""
    happened: list[tuple[str, Any]] = []
    executor = CountingExecutor()

    def started(**_: Any) -> None:
        happened.append(("request_started", threading.current_thread().name))

    def finished(**_: Any) -> None:
        happened.append(("request_finished", threading.current_thread().name))

    bodies = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop()
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        happened.append((message["type"], message.get("status")))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    request_started.connect(started)
    request_finished.connect(finished)
    asgi._threads.append(executor)  # the next request takes this thread
    try:
        asyncio.run(asgi.application(scope, receive, send))
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
        if executor in asgi._threads:
            asgi._threads.remove(executor)
        executor.shutdown()
    return happened, executor.hops


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("path", "method", "body", "status"),
    [
        ("/healthz", "GET", b"", 200),
        ("/api/v1/tables/1", "GET", b"", 401),  # no token: an error answer goes the same way
        ("/api/v1/guests", "POST", b'{"name": "Ada"}', 201),  # a write: its transaction, then the answer
    ],
)
def test_a_request_is_served_in_one_hop_and_closed_before_its_answer_is_sent(
    settings: Any, path: str, method: str, body: bytes, status: int
) -> None:
    settings.WEB_KEEP_REQUEST_THREADS = True
    happened, hops = _serve(path, body, method)
    assert hops == 1
    assert [what for what, _ in happened] == [
        "request_started",
        "request_finished",  # the database connection given back before the answer goes out
        "http.response.start",
        "http.response.body",
    ]
    threads = {where for what, where in happened if what.startswith("request_")}
    assert len(threads) == 1 and threads.pop().startswith("counted-request")
    assert happened[2][1] == status
