"""OpenTelemetry traces, off unless configured (docs/operations.md#traces): the set-up from the standard
OTEL_* variables, the spans no instrumentation library makes here (HTTP requests, the embedded
worker's tasks, stream deliveries), and carrying a trace across threads, lanes and Redis wake-ups.

Off (the default) nothing is installed and no span is made: every hook below first reads `ON`, a
module attribute, and returns. On, `setup` installs the libraries' instrumentations where they fit:
Celery (a task's span is a child of the code that queued it: the W3C context travels in the task
message's headers), httpx (webhook sends, brought bots' calls and pushes: a client span, and the
`traceparent`/`tracestate` headers so an app continues the trace), psycopg and Redis (their calls
within a request or task). The HTTP request's span is made by RequestContextMiddleware
(hearts_service/observability.py) rather than opentelemetry-instrumentation-django, whose
middleware is sync-only (under ASGI it would put every request, and every event stream, behind a
thread hop) and would sit before the middleware that names the request; the ASGI instrumentation
would keep a span open for a stream's whole life, one per chunk sent, and knows no route."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagate import extract, inject
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

log = logging.getLogger(__name__)
T = TypeVar("T")

ON = False  # tracing is set up in this process: read first by every hook, so off costs nothing more
NAME = "hearts"  # the instrumentation scope of the spans made here
_tracer: trace.Tracer = trace.NoOpTracer()
_provider: Any = None  # the SDK's TracerProvider once set up
_instrumentors: list[Any] = []
# The Celery instrumentation's span of the sweep beat sends every second (settings.CELERY_BEAT_SCHEDULE).
PERIODIC = frozenset({"run/games.sweep", "apply_async/games.sweep"})
# Without Redis (the embedded run, tests) webhooks and pushes are sent by the sweep's sender
# thread, not by a task: the trace that recorded one is kept here until it is sent (bounded).
_remembered: OrderedDict[str, Context] = OrderedDict()
REMEMBER = 10_000


# -- set-up -------------------------------------------------------------------------------------


def _sampler(name: str, ratio: float) -> Any:
    """OTEL_TRACES_SAMPLER (and its _ARG), except that a database, Redis or HTTP client call
    outside any trace starts none (the streams' safety poll, the clock drainer and the wake-up
    publisher thread would otherwise each make a root span every few milliseconds, of no use
    alone), nor does the sweep that beat sends every second (PERIODIC)."""
    from opentelemetry.sdk.trace import sampling

    base: sampling.Sampler = {
        "always_on": sampling.ALWAYS_ON,
        "always_off": sampling.ALWAYS_OFF,
        "traceidratio": sampling.TraceIdRatioBased(ratio),
    }[name.removeprefix("parentbased_")]
    if name.startswith("parentbased_"):
        base = sampling.ParentBased(base)

    class EntryPoints(sampling.Sampler):
        def should_sample(
            self,
            parent_context: Context | None,
            trace_id: int,
            name: str,
            kind: SpanKind | None = None,
            attributes: Any = None,
            links: Sequence[Link] | None = None,
            trace_state: Any = None,
        ) -> sampling.SamplingResult:
            parent = trace.get_current_span(parent_context).get_span_context()
            if not parent.is_valid and (kind == SpanKind.CLIENT or name in PERIODIC):
                return sampling.SamplingResult(sampling.Decision.DROP)
            return base.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

        def get_description(self) -> str:
            return f"EntryPoints{{{base.get_description()}}}"

    return EntryPoints()


def setup(role: str, *, exporter: Any = None) -> bool:
    """Switch tracing on in this process (`role`: web, worker) when the settings say so
    (settings.TRACING), or with `exporter` (the tests' InMemorySpanExporter, spans exported as each
    ends); whether it is on. Called once per process: hearts_service/asgi.py, wsgi.py, and a
    Celery worker's start (hearts_service/celery.py; a prefork pool's children inherit it)."""
    global ON, _tracer, _provider
    from django.conf import settings

    if ON:
        return True
    if exporter is None and not settings.TRACING:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    # Resource.create adds OTEL_RESOURCE_ATTRIBUTES (ours win: OTEL_SERVICE_NAME is read by the settings).
    resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME, "hearts.process": role})
    provider = TracerProvider(
        resource=resource, sampler=_sampler(settings.OTEL_TRACES_SAMPLER, settings.OTEL_TRACES_SAMPLER_ARG)
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        provider.add_span_processor(BatchSpanProcessor(_exporter(settings.OTEL_TRACES_EXPORTER)))
        trace.set_tracer_provider(provider)  # once per process: other libraries' spans go there too
    _provider, _tracer = provider, provider.get_tracer(NAME)
    _instrument(provider)
    ON = True
    log.info("tracing on (%s)", role)
    return True


def _exporter(kind: str) -> Any:
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    # Reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION itself.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _instrument(provider: Any) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    for instrumentor, options in (
        (CeleryInstrumentor(), {}),  # type: ignore[no-untyped-call]  # the library leaves it unannotated
        (HTTPXClientInstrumentor(), {"request_hook": _outgoing}),
        (PsycopgInstrumentor(), {"enable_commenter": False}),
        (RedisInstrumentor(), {}),
    ):
        instrumentor.instrument(tracer_provider=provider, **options)
        _instrumentors.append(instrumentor)


def teardown() -> None:
    """Switch tracing off again (the tests): the instrumentations removed, spans ended so far flushed."""
    global ON, _tracer, _provider
    ON = False
    while _instrumentors:
        _instrumentors.pop().uninstrument()
    if _provider is not None:
        _provider.shutdown()
    _provider, _tracer = None, trace.NoOpTracer()
    _remembered.clear()


def _outgoing(span: Any, request: Any) -> None:
    """httpx's request hook: the URL on the span without its path and query (an APNs URL holds
    the device token, a Web Push endpoint and many webhook URLs are secrets)."""
    url = request.url if hasattr(request, "url") else request[1]
    bare = f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "") + "/"
    for key in ("http.url", "url.full"):
        if key in (getattr(span, "attributes", None) or {}):
            span.set_attribute(key, bare)


# -- logs ----------------------------------------------------------------------------------------


def ids() -> tuple[str, str] | None:
    """(trace id, span id) of the span running now, as hex, or None (none, or tracing off)."""
    if not ON:
        return None
    found = trace.get_current_span().get_span_context()
    if not found.is_valid:
        return None
    return format(found.trace_id, "032x"), format(found.span_id, "016x")


# -- HTTP requests (RequestContextMiddleware) ----------------------------------------------------


def request_began(request: Any, log_context: dict[str, Any]) -> None:
    """The request's server span, continuing the caller's trace when it sent a `traceparent`;
    current until request_ended. Called only when ON."""
    method = request.method or ""
    route = log_context.get("route", "")
    parent = extract(request.headers)
    span = _tracer.start_span(
        f"{method} {route}",
        context=parent,
        kind=SpanKind.SERVER,
        attributes={
            "http.request.method": method,
            "http.route": route,
            "url.path": request.path,
            "hearts.request_id": log_context["request_id"],
        },
    )
    if "table_id" in log_context:
        span.set_attribute("hearts.table_id", log_context["table_id"])
    request.trace_span = span
    request.trace_token = context_api.attach(trace.set_span_in_context(span, parent))


def request_ended(request: Any, status: int) -> None:
    span = getattr(request, "trace_span", None)
    if span is None:
        return
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))
    span.end()
    context_api.detach(request.trace_token)  # (logged, never raised, if it was attached elsewhere)


# -- carrying a trace ----------------------------------------------------------------------------


def capture() -> Context | None:
    """The trace context running now, to continue elsewhere (another thread, later); None when off."""
    return context_api.get_current() if ON else None


def resumed(origin: Context | None) -> contextlib.AbstractContextManager[None]:
    """Run the block in `origin` (from capture); nothing when None (no generator made)."""
    return _NOTHING if origin is None else _resumed(origin)


_NOTHING: contextlib.nullcontext[None] = contextlib.nullcontext()  # reusable: what a hook is when off


@contextlib.contextmanager
def _resumed(origin: Context) -> Iterator[None]:
    token = context_api.attach(origin)
    try:
        yield
    finally:
        context_api.detach(token)


def carry(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, run in the caller's context wherever it is called (a pool thread): the trace and log
    context follow it. `fn` itself when off."""
    if not ON:
        return fn
    return functools.partial(contextvars.copy_context().run, fn)


def task_span(name: str, queue: str, origin: Context | None) -> contextlib.AbstractContextManager[None]:
    """The embedded worker's run of task `name` (games.embedded; Celery's signals are not sent
    there), a child of the code that queued it, like the Celery instrumentation's `run/<name>`."""
    return _NOTHING if origin is None else _task_span(name, queue, origin)


@contextlib.contextmanager
def _task_span(name: str, queue: str, origin: Context) -> Iterator[None]:
    with (
        resumed(origin),
        _tracer.start_as_current_span(
            f"run/{name}",
            kind=SpanKind.CONSUMER,
            attributes={"celery.task_name": name, "messaging.destination": queue, "hearts.embedded": True},
        ),
    ):
        yield


def remember(keys: Iterable[str]) -> None:
    """Without a task to carry it (an eager run): keep the trace running now for `keys` (webhook
    delivery and push message ids), for `recall` where they are sent."""
    if not ON:
        return
    here = context_api.get_current()
    for key in keys:
        _remembered[key] = here
        _remembered.move_to_end(key)
    while len(_remembered) > REMEMBER:
        _remembered.popitem(last=False)


def recall(key: str) -> Context | None:
    """The trace remembered for `key`, once (None when off or none)."""
    if not ON:
        return None
    return _remembered.pop(key, None)


# -- stream wake-ups and deliveries --------------------------------------------------------------


def traceparent() -> str | None:
    """The W3C `traceparent` of the span running now (for a wake-up message), or None."""
    if not ON:
        return None
    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent")


def from_traceparent(value: str) -> Context | None:
    """The context a wake-up carried (None when off, or none carried)."""
    if not ON or not value:
        return None
    found = extract({"traceparent": value})
    return found if trace.get_current_span(found).get_span_context().is_valid else None


def fanout_span(
    table_id: int, origin: Context | None, viewers: int
) -> contextlib.AbstractContextManager[Context | None]:
    """A web process's shared read of a table for its streams after a change, a child of the
    change's span (the request or task that committed it); gives the context the deliveries
    continue from (None when nothing is traced)."""
    return _NOTHING if origin is None else _fanout_span(table_id, origin, viewers)


@contextlib.contextmanager
def _fanout_span(table_id: int, origin: Context, viewers: int) -> Iterator[Context | None]:
    with _tracer.start_as_current_span(
        "stream fan-out",
        context=origin,
        kind=SpanKind.CONSUMER,
        attributes={"hearts.table_id": table_id, "hearts.stream.viewers": viewers},
    ) as span:
        yield trace.set_span_in_context(span)


def delivered(origin: Context, table_id: int, version: int, events: int, viewer: str) -> None:
    """One stream's (or GraphQL subscription's) batch of a table's events, made from the shared read
    `origin` (fanout_span): an instant span, child of that read."""
    _tracer.start_span(
        "stream delivery",
        context=origin,
        kind=SpanKind.PRODUCER,
        attributes={
            "hearts.table_id": table_id,
            "hearts.version": version,
            "hearts.stream.events": events,
            "hearts.stream.viewer": viewer,
        },
    ).end()
