"""Request and task context for logs, the log formats, the access log, and the Celery signal
handlers that time tasks. Nothing here ever logs a request's body or headers: only its method,
URL pattern, status and duration, so no token, key or card reaches a log through it.

A request (or task) sets a context (a contextvar, so it follows sync and async code alike; the
dict inside is shared by the threads sync_to_async runs code in) that `ContextFilter` copies onto
every log record: `request_id`, `route`, `method`, `table_id` for requests, `task_id`, `task`,
`table_id` for tasks. With tracing on (hearts_service/tracing.py) the middleware also makes the
request's span (its `hearts.request_id` attribute is the request id), and every record carries the
`trace_id` and `span_id` of the span running when it was written."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar, Token
from typing import Any, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import Resolver404, resolve

from hearts_service import tracing

REQUEST_ID_HEADER = "X-Request-ID"
PUBLISHED_HEADER = "hearts_published_at"  # a task message header: the publisher's time.time()
FIELDS = (
    "request_id",
    "table_id",
    "route",
    "method",
    "status",
    "duration_ms",
    "wait_ms",  # served: how long the request waited in the ASGI app (a slot, a thread) before the chain
    "task_id",
    "task",
    "trace_id",  # with tracing on (hearts_service/tracing.py): the span running when the line was written
    "span_id",
)
UNMATCHED = "<unmatched>"  # the route label of a URL no pattern matches (bounded labels)
# A client's request id is echoed and logged only when it looks like an id (no spaces, no quotes).
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# Tasks whose first argument is a table id.
TABLE_TASKS = frozenset({"games.play_bots", "games.enforce_clock"})

_context: ContextVar[dict[str, Any] | None] = ContextVar("hearts_log_context", default=None)
access_log = logging.getLogger("hearts.access")


def current() -> dict[str, Any]:
    """The ids of the request or task running now (empty outside one)."""
    return _context.get() or {}


class ContextFilter(logging.Filter):
    """Copies the current request's or task's ids onto each record (a record's own extra wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        # django.request logs a 4xx/5xx after the middleware returned: its record carries the request.
        context = current() or getattr(getattr(record, "request", None), "log_context", None) or {}
        for name, value in context.items():
            if not hasattr(record, name):
                setattr(record, name, value)
        if tracing.ON and not hasattr(record, "trace_id"):
            found = tracing.ids()
            if found is not None:
                record.trace_id, record.span_id = found
        return True


class Repeats(logging.Filter):
    """Lets a message through once per `seconds` (per logger and message template), counting the
    ones held back in the next that passes: psycopg's pool logs every failed attempt to reconnect,
    20 a second per process while the database is down (hearts_service.outages.RECONNECT_EVERY)."""

    def __init__(self, seconds: float = 5.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.last: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        since, held = self.last.get(key, (-self.seconds, 0))
        if now - since < self.seconds:
            self.last[key] = (since, held + 1)
            return False
        self.last[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last {now - since:.0f} s)"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the context fields known, and the
    traceback (`exc`) of an exception. Only these fields: never a record's other extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """Readable lines for development: `time LEVEL logger: message [request_id=... table_id=...]`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        known = [f"{n}={getattr(record, n)}" for n in FIELDS if getattr(record, n, None) is not None]
        if not known:
            return text
        head, sep, tail = text.partition("\n")  # after the message, before any traceback
        return f"{head} [{' '.join(known)}]{sep}{tail}"


def _request_id(request: HttpRequest) -> str:
    given = request.headers.get(REQUEST_ID_HEADER, "")
    return given if _SANE_ID.fullmatch(given) else uuid.uuid4().hex


class RequestContextMiddleware:
    """First in MIDDLEWARE: gives each request an id (a sane incoming X-Request-ID, else a new
    one), answers it in X-Request-ID, sets the log context (request id, route pattern, table id
    from the URL), writes one access log line, and observes the request latency metric."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        started, token = self._begin(request)
        response = None
        try:
            response = self.get_response(request)
            return response
        finally:
            self._end(request, response, started, token)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        started, token = self._begin(request)
        response = None
        try:
            response = cast(HttpResponse, await self.get_response(request))  # an async chain here
            return response
        finally:
            self._end(request, response, started, token)

    @staticmethod
    def _begin(request: HttpRequest) -> tuple[float, Token[dict[str, Any] | None]]:
        started = time.perf_counter()
        context: dict[str, Any] = {"request_id": _request_id(request), "method": request.method}
        try:
            match = resolve(request.path_info, getattr(request, "urlconf", None))
        except Resolver404:
            context["route"] = UNMATCHED
        else:
            context["route"] = match.route or UNMATCHED
            if "table_id" in match.kwargs:
                context["table_id"] = match.kwargs["table_id"]
        request.request_id = context["request_id"]  # type: ignore[attr-defined]  # our own request attribute
        request.log_context = context  # type: ignore[attr-defined]  # our own request attribute
        if tracing.ON:
            tracing.request_began(request, context)
        return started, _context.set(context)

    @staticmethod
    def _end(
        request: HttpRequest,
        response: HttpResponse | None,
        started: float,
        token: Token[dict[str, Any] | None],
    ) -> None:
        from games.infra import metrics  # the metrics module reads settings: import it once Django is set up

        try:
            seconds = time.perf_counter() - started
            context = current()
            status = response.status_code if response is not None else 500
            if response is not None:
                response[REQUEST_ID_HEADER] = context["request_id"]
                if response.streaming:  # a stream's body is produced later, outside this call
                    _keep_context(response, context)  # type: ignore[arg-type]  # streaming: a StreamingHttpResponse
            metrics.request_done(context["route"], request.method or "", status, seconds)
            ms = round(seconds * 1000, 2)
            level = logging.ERROR if status >= 500 else logging.INFO
            extra: dict[str, Any] = {"status": status, "duration_ms": ms}
            received = getattr(request, "scope", {}).get("hearts.received")
            if received is not None:  # served: from the ASGI app's first look at it to this chain
                extra["wait_ms"] = round((started - received) * 1000, 2)
            route = context["route"]
            access_log.log(level, "%s %s %d %.1fms", request.method, route, status, ms, extra=extra)
        finally:
            if tracing.ON:
                tracing.request_ended(request, response.status_code if response is not None else 500)
            _context.reset(token)


def _keep_context(response: StreamingHttpResponse, context: dict[str, Any]) -> None:
    """Lines logged while a streaming body is produced (an event stream) carry the request's ids:
    the context is set around each step of the body's iterator, and around its closing."""
    content = response.streaming_content
    if response.is_async:

        async def stepped_async() -> AsyncIterator[Any]:
            iterator = aiter(content)  # type: ignore[arg-type]  # is_async: an async iterable
            try:
                while True:
                    token = _context.set(context)
                    try:
                        chunk = await anext(iterator)
                    except StopAsyncIteration:
                        return
                    finally:
                        _context.reset(token)
                    yield chunk
            finally:
                token = _context.set(context)
                try:
                    await iterator.aclose()  # type: ignore[attr-defined]  # an async generator's
                finally:
                    _context.reset(token)

        response.streaming_content = stepped_async()
    else:

        def stepped() -> Iterator[Any]:
            iterator = iter(content)  # type: ignore[arg-type]  # not is_async: a sync iterable
            try:
                while True:
                    token = _context.set(context)
                    try:
                        chunk = next(iterator)
                    except StopIteration:
                        return
                    finally:
                        _context.reset(token)
                    yield chunk
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()

        response.streaming_content = stepped()


# -- Celery (connected in hearts_service/celery.py) -----------------------------------------

_running: dict[str, tuple[Token[dict[str, Any] | None], float]] = {}


def task_published(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """before_task_publish: stamp the message with the time it was sent (a retry is restamped)."""
    if headers is not None:
        headers[PUBLISHED_HEADER] = time.time()


def _queued_seconds(request: Any) -> float | None:
    """From the later of publication and ETA to now; None without a stamp (an eager task)."""
    published = getattr(request, PUBLISHED_HEADER, None)
    if published is None:
        published = (getattr(request, "headers", None) or {}).get(PUBLISHED_HEADER)
    if published is None:
        return None
    since = float(published)
    eta = getattr(request, "eta", None)
    if eta:
        moment = eta if isinstance(eta, dt.datetime) else dt.datetime.fromisoformat(str(eta))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        since = max(since, moment.timestamp())
    return time.time() - since


def task_started(
    task_id: str | None = None, task: Any = None, args: Any = (), kwargs: Any = None, **_: Any
) -> None:
    """task_prerun: the task's ids join the log context (kept on top of a request's, for an eager
    task run inside one), and its queue latency is observed."""
    from games.infra import metrics

    name = getattr(task, "name", "") or ""
    context = {**current(), "task_id": task_id, "task": name}
    table = (kwargs or {}).get("table_id")
    if table is None and name in TABLE_TASKS and args:
        table = args[0]
    if table is not None:
        context["table_id"] = table
    if task_id:
        _running[task_id] = (_context.set(context), time.perf_counter())
    queued = _queued_seconds(getattr(task, "request", None))
    if queued is not None:
        metrics.task_queued_for(name, queued)


def task_finished(task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any) -> None:
    """task_postrun: the task's duration is observed and the log context restored."""
    from games.infra import metrics

    token, started = _running.pop(task_id or "", (None, None))
    if started is not None:
        metrics.task_ran(getattr(task, "name", "") or "", state or "", time.perf_counter() - started)
    if token is not None:
        try:
            _context.reset(token)
        except ValueError:  # set in another context (should not happen): just clear it
            _context.set(None)
