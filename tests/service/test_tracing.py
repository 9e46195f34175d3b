"""Traces (hearts_service/tracing.py, docs/operations.md#traces): off by default with nothing
installed; on, a person's play is one trace holding the bot moves it caused, the brought bot's call
and the webhook it produced (each sent with that trace's `traceparent`), its log lines carry the
trace id, and a stream's delivery of the change is linked to it. The last test does it across real
processes: a Celery worker exporting over OTLP/HTTP to a collector the test runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import runpy
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from celery import shared_task
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from rest_framework.test import APIClient

from games import reads, services, webhooks
from games.accounts import Principal, app_create, player_create
from games.infra import notify
from games.live import fanout
from games.models import Table
from games.services import record
from hearts_service import observability, tracing
from tests.bots.test_bots_byo import ExternalBot, _answer, register
from tests.services.test_webhooks import Receiver


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process, every span kept in memory; off again afterwards."""
    exporter = InMemorySpanExporter()
    assert tracing.setup("test", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.teardown()


class Lines(logging.Handler):
    """The records of a logger as the service's handler sees them (with its ContextFilter)."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(observability.ContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def access_lines() -> Iterator[Lines]:
    lines = Lines()
    observability.access_log.addHandler(lines)
    try:
        yield lines
    finally:
        observability.access_log.removeHandler(lines)


def hexid(n: int, width: int = 32) -> str:
    return format(n, f"0{width}x")


def descends(span: ReadableSpan, ancestor: ReadableSpan, by_id: dict[int, ReadableSpan]) -> bool:
    """Whether `ancestor` is on `span`'s chain of parents."""
    parent = span.parent
    while parent is not None:
        if parent.span_id == ancestor.context.span_id:
            return True
        found = by_id.get(parent.span_id)
        parent = found.parent if found is not None else None
    return False


# -- off ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_off_by_default_nothing_is_installed_and_no_span_is_made(access_lines: Lines, settings: Any) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    assert settings.TRACING is False  # no OTEL_* variable in the test environment
    assert tracing.setup("web") is False and tracing.ON is False
    for instrumentor in (CeleryInstrumentor(), HTTPXClientInstrumentor(), PsycopgInstrumentor()):
        assert not instrumentor.is_instrumented_by_opentelemetry
    assert not hasattr(httpx.HTTPTransport.handle_request, "__wrapped__")
    assert tracing.capture() is None and tracing.traceparent() is None
    assert tracing.carry(len) is len
    app, _ = app_create(name="a")
    _, token = player_create(app=app, name="Ana")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert c.get("/api/v1/me").status_code == 200
    (line,) = [r for r in access_lines.records if r.getMessage().startswith("GET api/v1/me")]
    assert getattr(line, "request_id", None) and not hasattr(line, "trace_id")
    assert "trace_id" not in observability.JsonFormatter().format(line)


def test_the_switch_is_the_standard_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """On when there is somewhere to send spans; OTEL_SDK_DISABLED and `none` win; a sampler
    name that is not one of the standard ones stops start-up (the settings module, run here)."""
    settings_file = str(Path(__file__).resolve().parents[2] / "hearts_service" / "settings.py")

    def traced(**env: str) -> bool:
        for variable in [v for v in os.environ if v.startswith("OTEL_")]:
            monkeypatch.delenv(variable)
        for variable, value in env.items():
            monkeypatch.setenv(variable, value)
        return bool(runpy.run_path(settings_file)["TRACING"])

    assert traced() is False
    assert traced(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318") is True
    assert traced(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://collector:4318/v1/traces") is True
    assert traced(OTEL_TRACES_EXPORTER="console") is True
    assert traced(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", OTEL_TRACES_EXPORTER="none") is False
    assert traced(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", OTEL_SDK_DISABLED="true") is False
    with pytest.raises(ImproperlyConfigured, match="OTEL_TRACES_SAMPLER"):
        traced(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", OTEL_TRACES_SAMPLER="sometimes")


# -- on, in one process -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_persons_play_is_one_trace_with_the_bot_moves_it_caused_and_the_calls_it_made(
    spans: InMemorySpanExporter, access_lines: Lines
) -> None:
    app, key = app_create(name="a")
    bot = ExternalBot(lambda n, body: "ok")
    hook = Receiver()
    try:
        register(key, bot, name="good", timeout_ms=2000)
        created = APIClient()
        created.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        assert created.post("/api/v1/webhooks", {"url": hook.url}, format="json").status_code == 201
        ana, token = player_create(name="Ana", app=app)
        out = services.table_create(
            options={"target_score": 50}, bots={1: "ext:good"}, clocks={"play": None}, app=app
        )
        assert out.table is not None
        table_id = out.table.pk
        services.seat_join(table_id=table_id, player=ana, scope=app)
        services.table_start(table_id=table_id, fill_with="basic", player=ana, scope=app)
        webhooks.deliver_due()
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        # Ana acts until one of her actions makes the bots move (the first pass, or a card that
        # does not end a trick she wins): that request's trace is the one looked at.
        for n in range(60):
            webhooks.deliver_due()  # the last action's webhooks, in its own trace
            spans.clear()
            bot.received.clear()
            hook.received.clear()
            table = Table.objects.get(pk=table_id)
            legal = reads.table_body(table, Principal(player=ana, app=app))["game"]["legal_actions"]
            action = _answer({"legal_actions": legal, "view": {"hand": []}}, illegal=False)
            request_id = f"play-{n}"
            r = c.post(
                f"/api/v1/tables/{table_id}/actions", action, format="json", HTTP_X_REQUEST_ID=request_id
            )
            assert r.status_code == 200, r.content
            if Table.objects.get(pk=table_id).version > table.version + 1 and bot.received:
                break
        else:
            raise AssertionError("no action of Ana's made the bots move")
        webhooks.deliver_due()  # the embedded sender (no Redis): it continues the remembered trace

        finished = spans.get_finished_spans()
        (server,) = [s for s in finished if s.kind == SpanKind.SERVER]
        assert server.name == "POST api/v1/tables/<id:table_id>/actions"
        assert server.attributes is not None and server.attributes["hearts.request_id"] == request_id
        assert server.attributes["http.response.status_code"] == 200 and server.parent is None
        trace_id = server.context.trace_id
        by_id = {s.context.span_id: s for s in finished}
        # One trace: every span made during the request and the deliveries after it.
        assert {s.context.trace_id for s in finished} == {trace_id}
        moves = [s for s in finished if s.name == "run/games.play_bots"]
        assert moves and all(s.kind == SpanKind.CONSUMER and descends(s, server, by_id) for s in moves)
        # The brought bot's calls (in the bot task) and the play's webhooks (sent later by the
        # sender thread): a client span each, its traceparent sent along, the URL without its path.
        assert hook.received
        for server_of, received in ((bot.server, bot.received), (hook.server, hook.received)):
            bare = f"http://127.0.0.1:{server_of.server_address[1]}/"
            calls = [
                s
                for s in finished
                if s.kind == SpanKind.CLIENT and (s.attributes or {}).get("http.url") == bare
            ]
            assert len(calls) == len(received) and all(descends(s, server, by_id) for s in calls)
            for headers, _ in received:
                version, sent_trace, parent, flags = headers["traceparent"].split("-")
                assert (version, sent_trace) == ("00", hexid(trace_id)) and int(flags, 16) & 1  # sampled
                assert parent in {hexid(s.context.span_id, 16) for s in calls}
        # The request's log lines carry its trace and span ids beside its request id.
        (line,) = [r for r in access_lines.records if getattr(r, "request_id", None) == request_id]
        assert line.trace_id == hexid(trace_id)  # type: ignore[attr-defined]
        assert line.span_id == hexid(server.context.span_id, 16)  # type: ignore[attr-defined]
        shown = json.loads(observability.JsonFormatter().format(line))
        assert shown["trace_id"] == hexid(trace_id) and shown["request_id"] == request_id
    finally:
        bot.close()
        hook.close()


SEEN: dict[str, list[Any]] = {}


@shared_task(name="tests.tracing_probe")
def tracing_probe(key: str) -> None:
    """A task that notes the span it runs in (no database: the lane thread holds no connection)."""
    SEEN.setdefault(key, []).append(trace.get_current_span().get_span_context())


def test_the_embedded_worker_runs_a_task_in_the_trace_that_queued_it(spans: InMemorySpanExporter) -> None:
    from games import embedded

    lane = embedded.Lane("test")
    with tracing._tracer.start_as_current_span("queued") as queued:
        lane.put("tests.tracing_probe", ("embedded",), "test", 0.0)
    for _ in range(100):
        if lane.ran:
            break
        time.sleep(0.05)
    (run,) = [s for s in spans.get_finished_spans() if s.name == "run/tests.tracing_probe"]
    assert run.parent is not None and run.parent.span_id == queued.get_span_context().span_id
    assert run.context.trace_id == queued.get_span_context().trace_id
    assert run.attributes is not None and run.attributes["hearts.embedded"] is True
    assert SEEN.pop("embedded") == [run.context]  # the task ran inside its span


@pytest.mark.django_db(transaction=True)
def test_a_stream_delivery_is_linked_to_the_change_that_produced_it(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Redis a commit wakes this process's streams directly; with Redis the wake-up message
    carries the `traceparent` (checked below by its parser): either way the fan-out's shared read
    is a child of the change's span, and each stream's delivery a child of that read."""
    # The bots' passes held back: run eagerly in the starting thread, their writes met the stream's
    # read of the in-memory SQLite of the tests ("database table is locked": shared-cache tables
    # lock without waiting), and the change under test is the start's alone.
    monkeypatch.setattr(record, "queue_tasks", lambda *task: None)
    app, _ = app_create(name="a")
    ana, _ = player_create(name="Ana", app=app)
    out = services.table_create(
        options={"target_score": 50}, bots={1: "basic"}, clocks={"play": None}, app=app
    )
    assert out.table is not None
    table_id = out.table.pk
    services.seat_join(table_id=table_id, player=ana, scope=app)
    principal = Principal(player=ana, app=app)

    def start() -> None:  # in a thread of its own, as a request is
        try:
            services.table_start(table_id=table_id, fill_with="basic", player=ana, scope=app)
        finally:
            connection.close()

    async def follow_one_change() -> list[Any]:
        from games.live import events

        got: list[Any] = []
        gen = events.table_events(principal, table_id, None, None, lambda: 5.0)
        item = await anext(gen)
        assert item is not None and item[1]["type"] == "state"
        while (item := await anext(gen)) is not None:
            pass
        with tracing._tracer.start_as_current_span("change"):
            await sync_to_async(start, thread_sensitive=False)()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            item = await asyncio.wait_for(anext(gen), 10)
            if item is not None:
                got.append(item)
            elif got:
                break
        await gen.aclose()
        return got

    events_seen = asyncio.run(follow_one_change())
    assert events_seen
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    (root,) = [s for s in finished if s.name == "change"]
    fanouts = [s for s in finished if s.name == "stream fan-out"]
    deliveries = [s for s in finished if s.name == "stream delivery"]
    assert fanouts and deliveries
    # In the change's trace: the read under the commit's span (the start's, or a bot task's after
    # it), each delivery under a read.
    assert all(s.context.trace_id == root.context.trace_id for s in fanouts + deliveries)
    assert all(descends(s, root, by_id) for s in fanouts)
    assert all(
        s.parent is not None and s.parent.span_id in {f.context.span_id for f in fanouts} for s in deliveries
    )
    assert all(s.attributes and s.attributes["hearts.table_id"] == table_id for s in deliveries)
    delivered = sum(s.attributes["hearts.stream.events"] for s in deliveries if s.attributes)
    assert delivered == len(events_seen) - sum(1 for _, e in events_seen if e["type"] == "your_turn")

    # The wake-up message with Redis: `<version>;<traceparent>`, read back by the hub's parser.
    with tracing._tracer.start_as_current_span("commit") as commit:
        note = notify._Note(table_id, 7, frozenset(), False, tracing.traceparent())
    hub = fanout.Hub(asyncio.new_event_loop())
    announced: list[Any] = []
    feed = fanout.Feed(table_id)
    feed.announce = lambda version, origin=None, change=None: announced.append((version, origin, change))  # type: ignore[method-assign]
    hub.feeds[table_id] = feed
    channel = notify.table_channel(table_id)
    hub._dispatch({"type": "message", "channel": channel, "data": f"{note.version};{note.trace}".encode()})
    # and `<version>;<traceparent>;<change>` when the wake-up carries its change (games.changes)
    hub._dispatch({"type": "message", "channel": channel, "data": f"8;{note.trace};{{}}".encode()})
    (version, origin, change), (_, carried_origin, carried) = announced
    assert (version, change, carried) == (7, None, "{}")
    for span_of in (origin, carried_origin):
        assert trace.get_current_span(span_of).get_span_context().span_id == commit.get_span_context().span_id
    hub.loop.close()


# -- on, across processes ---------------------------------------------------------------------------


class Collector:
    """A local OTLP/HTTP trace receiver: the spans every process exports to it."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest.FromString(raw)
                with owner.lock:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            owner.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def named(self, name: str) -> list[Any]:
        with self.lock:
            return [s for s in self.spans if s.name == name]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
@pytest.mark.needs_postgres
@pytest.mark.needs_redis
@pytest.mark.django_db(transaction=True)
def test_real_processes_continue_one_trace_from_the_play_to_the_webhook_and_the_stream(
    workers: Callable[..., subprocess.Popen[bytes]],
    web: Callable[..., str],
    spans: InMemorySpanExporter,
) -> None:
    """This process starts a table in a span (as a request would); a real worker plays the bots'
    passes in that trace and sends the webhook with its traceparent; a real web server's stream
    delivers the change in that trace too (the wake-up carried it through Redis pub/sub); and the
    web server continues the trace of a request sent with a traceparent. Every process exports
    over OTLP/HTTP to the collector this test runs."""
    collector = Collector()
    hook = Receiver()
    try:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within a tenth of a second
        }
        workers(queues="clocks,people,bots,webhooks", **env)
        base = web(**env)
        app, _ = app_create(name="a")
        webhooks.endpoint_create(app=app, url=hook.url, event_types=["*"])
        ana, token = player_create(name="Ana", app=app)
        out = services.table_create(
            options={"target_score": 50}, bots={1: "basic"}, clocks={"play": None}, app=app
        )
        assert out.table is not None
        table_id = out.table.pk
        services.seat_join(table_id=table_id, player=ana, scope=app)
        auth = {"Authorization": f"Bearer {token}"}
        opened, stop = threading.Event(), threading.Event()

        def follow() -> None:  # Ana's table stream on the web server, open while the bots pass
            url = f"{base}/api/v1/tables/{table_id}/stream"
            with (
                contextlib.suppress(httpx.HTTPError),
                httpx.stream("GET", url, headers=auth, timeout=30) as r,
            ):
                for _ in r.iter_lines():
                    opened.set()
                    if stop.is_set():
                        return

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert opened.wait(15), "the stream did not open"
        with tracing._tracer.start_as_current_span("the play") as play:
            services.table_start(table_id=table_id, fill_with="basic", player=ana, scope=app)
        trace_id = play.get_span_context().trace_id
        ours = trace_id.to_bytes(16, "big")
        published = [s for s in spans.get_finished_spans() if s.kind == SpanKind.PRODUCER]
        assert any(s.name == "apply_async/games.play_bots" for s in published)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ran = [s for s in collector.named("run/games.play_bots") if s.trace_id == ours]
            sent = [
                h for h, _ in hook.received if h.get("traceparent", "").split("-")[1:2] == [hexid(trace_id)]
            ]
            delivered = [s for s in collector.named("stream delivery") if s.trace_id == ours]
            if ran and sent and delivered:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"not all in the trace: {sorted({s.name for s in collector.spans})}")
        producers = {s.context.span_id.to_bytes(8, "big") for s in published}
        assert any(s.parent_span_id in producers for s in ran)  # a child of this process's send
        fanouts = {s.span_id for s in collector.named("stream fan-out") if s.trace_id == ours}
        assert all(s.parent_span_id in fanouts for s in delivered)

        # A request that carries a traceparent (httpx's instrumentation sends its client span's, as an
        # app's would): the web server's span continues that trace.
        with tracing._tracer.start_as_current_span("a client") as client:
            r = httpx.get(f"{base}/api/v1/tables/{table_id}", headers=auth, timeout=10)
        assert r.status_code == 200
        theirs = client.get_span_context()
        (sent,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT and s.parent == theirs]
        while time.monotonic() < deadline:  # its children (SQL) may be exported before it: wait for it
            served = [s for s in collector.spans if s.trace_id == theirs.trace_id.to_bytes(16, "big")]
            if any(s.kind == s.SPAN_KIND_SERVER for s in served):
                break
            time.sleep(0.2)
        (server,) = [s for s in served if s.kind == s.SPAN_KIND_SERVER]
        assert server.name == "GET api/v1/tables/<id:table_id>"
        assert server.parent_span_id == sent.context.span_id.to_bytes(8, "big")
        request_ids = [a.value.string_value for a in server.attributes if a.key == "hearts.request_id"]
        assert request_ids == [r.headers["X-Request-ID"]]  # the request id, tied to the trace
        stop.set()
    finally:
        collector.close()
        hook.close()
