"""ASGI entry point for asynchronous application servers such as uvicorn."""

import asyncio
import gc
import os
import re
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.asgi import get_asgi_application
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse
from django.urls import set_script_prefix

from hearts_service.env import env_float

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# A request runs in a thread of its own beside the event loop that serves the streams; it gives the
# interpreter lock back at each database or Redis round trip and must get it back promptly after.
# Python's default switch interval (5 ms) made a thread wait up to 5 ms per round trip whenever the
# loop was busy: a play's answer took 90 ms at the median under load (bench/HISTORY.md, load.py).
sys.setswitchinterval(env_float("GIL_SWITCH_INTERVAL", 0.0005, minimum=0.000001, maximum=1.0))

django_application = get_asgi_application()


class SyncChainHandler(ASGIHandler):
    """Django's ASGI handler for requests whose views are synchronous (every one but the event
    streams'), each served in one hop from the event loop to the request's thread: there the
    `request_started` signal, the request object, the whole middleware chain down to Django's
    synchronous view call, and (for an answer already in memory) the response's close, with its
    `request_finished` (the database connection back to the pool before the answer is sent).
    Django's own handler makes three hops of each request (the signal's synchronous receivers, the
    chain, the close) and ends the chain in its asynchronous view call, a fourth; each hop is a
    thread hand-off both ways (bench/requests.py: Django's handler costs 1.3 times the CPU per
    request). It also watches for the client's disconnect in a task of its own, to cancel an
    asynchronous view: a synchronous one goes on in its thread regardless, so that task is not
    made here (the server drops what is sent after a disconnect). A streaming answer is sent and
    closed as Django does. An asynchronous view reached here still works: Django's synchronous call
    runs it with async_to_sync, as the other handler would have."""

    def load_middleware(self, is_async: bool = False) -> None:
        """The chain loaded synchronous: `handle` calls Django's synchronous `get_response` in the
        request's thread (the handler's asynchronous `get_response_async` is not used)."""
        super().load_middleware(is_async=False)
        self._serve_in_thread = sync_to_async(self._serve, thread_sensitive=True)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            response = await self._serve_in_thread(scope, body_file)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:  # its body was produced while sending: closed after it
                    await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def _serve(self, scope: dict[str, Any], body_file: Any) -> Any:
        """In the request's thread: everything Django's handler does around the chain, in order."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, refused = self.create_request(scope, body_file)
        response: Any  # an HttpResponseBase (the stubs lack the private attributes set below)
        if request is None:
            response = refused  # 400 or 413: the request could not be made
        else:
            response = self.get_response(request)  # Django's: the urlconf, the chain, the error log
            response._handler_class = self.__class__  # as Django's handler sets it
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()  # request_finished: resources and the database connection given back
        return response


POLICY_VIOLATION = 1008  # WebSocket close code: a WebSocket at a path that serves none


from games.graphql import socket  # noqa: E402  (imports models: after get_asgi_application set Django up)
from games.infra import metrics, pressure  # noqa: E402
from hearts_service import tracing  # noqa: E402

tracing.setup("web")  # off unless the OTEL_* variables say so (docs/operations.md#traces)
request_application = SyncChainHandler() if settings.WEB_SYNC_CHAIN else django_application


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """HTTP (and lifespan) to Django; WebSockets at /graphql/ to GraphQL over WebSocket
    (games/graphql/socket.py); any other WebSocket path is refused (403 at the handshake)."""
    if scope["type"] == "websocket":
        if scope.get("path", "").rstrip("/") == "/graphql":
            await socket.application(scope, receive, send)
        else:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})
        return
    if scope["type"] != "http" or STREAMS.match(scope.get("path", "")):
        await django_application(scope, receive, send)  # a stream holds no slot: it lasts
        return
    scope["hearts.received"] = time.perf_counter()  # the access log's wait_ms (observability)
    limit = _slots()
    if limit.locked():  # people's requests queue here: the bot lane yields (games.infra.pressure)
        metrics.web_request_queued()
        asyncio.get_running_loop().run_in_executor(None, pressure.mark)
    slot = pressure.Slot(limit)
    await slot.take()
    pressure.SLOT.set(slot)  # this request's task only: lent back while it waits on a lane
    if not settings.WEB_KEEP_REQUEST_THREADS:
        thread = None
    else:
        thread = _threads.pop() if _threads else ThreadPoolExecutor(1, thread_name_prefix="hearts-request")

    async def sending(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            slot.give_back()  # the answer is made: sending it (a long download too) holds no slot
        await send(message)

    try:
        async with ThreadSensitiveContext(executor=thread):
            await request_application(scope, receive, sending)
    finally:
        if thread is not None:
            _threads.append(thread)
        slot.give_back()


# The event streams (async views that last as long as the client follows): every other request is
# run in a request thread (`_threads`) and holds one of WEB_MAX_CONCURRENT_REQUESTS slots while it
# runs. Past capacity, more threads would only share the interpreter lock more thinly (each one
# slower, and throughput falling as they contend); the others wait their turn in the event loop,
# in order, and their waiting is the back pressure that makes the bot lane yield. A slot is given
# back once the answer starts: sending it, a long download too, holds none; and lent back while the
# request waits for another lane's answer (a hint, a review: games.infra.answers).
STREAMS = re.compile(r"^/api/v1/(tables/[^/]+/stream|me/stream)/?$")
_limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
# The request threads, kept: Django runs each request in a new thread (a ThreadSensitiveContext of
# its own, made and torn down per request); given one of these (the outermost context wins), a
# request reuses an idle thread instead (bench/requests.py). There are as many as requests were
# ever run or answered at once in this process.
_threads: list[ThreadPoolExecutor] = []


def _slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    found = _limits.get(loop)
    if found is None:
        for old in [old for old in _limits if old.is_closed()]:
            del _limits[old]
        found = _limits[loop] = asyncio.Semaphore(settings.WEB_MAX_CONCURRENT_REQUESTS)
        _watchers.add(loop.create_task(metrics.watch_loop()))  # hearts_web_loop_lag_seconds
    return found


_watchers: set[asyncio.Task[None]] = set()  # kept: the loop holds only a weak reference to a task


# The cycle collector, tuned for a process holding thousands of open streams: with Python's default
# thresholds it ran a full collection over all their objects every few seconds, and one event
# delivery in a hundred waited 0.2 to 0.6 s for it (bench/streams.py: commit-to-client p99 350 ms
# with 2,000 streams, 8.5 ms with these thresholds). Reference counting still frees almost everything
# at once; the collector only looks for cycles, now after 50,000 allocations instead of 700, and
# rarely over the old objects. The objects of the code loaded so far are never scanned again.
gc.freeze()
gc.set_threshold(50_000, 50, 50)
