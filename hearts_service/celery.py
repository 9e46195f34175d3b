"""The Celery app that runs bot moves and turn clocks, configured from the Django settings."""

import logging.config
import os
from typing import Any

from celery import Celery, signals

from hearts_service.env import env_int

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

app = Celery("hearts_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.celeryd_after_setup.connect
def _bot_lane(instance: Any, **_: Any) -> None:
    """`-Q bots` names the whole bot lane: the worker takes each app's sub-queue (bots.0 ...
    bots.N-1, games.infra.jobs.lane_of) in turn."""
    from games.infra import jobs

    queues = instance.app.amqp.queues
    if jobs.BOTS_QUEUE in queues.consume_from:
        queues.deselect([jobs.BOTS_QUEUE])
        for name in jobs.bot_queues():
            queues.select_add(name)


@signals.worker_ready.connect
def _clock_drainer(sender: Any, **_: Any) -> None:
    """A worker of the clock lane claims the turn clocks as they come due (games.infra.clocks)."""
    from games.infra import clocks, jobs, notify

    client = notify.shared_redis()
    if client is not None and jobs.CLOCKS_QUEUE in sender.app.amqp.queues.consume_from:
        clocks.start_draining(client, jobs.enforce_clock_now)


# -- observability (hearts_service/observability.py): task ids in logs, task metrics --------
@signals.setup_logging.connect
def _logging(**_: Any) -> None:
    """Workers log like the web processes (settings.LOGGING: JSON in production), not Celery's way."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.worker_init.connect
def _exporter(**_: Any) -> None:
    """CELERY_METRICS_PORT: serve this worker's metrics over HTTP (see games.infra.metrics.start_exporter)."""
    port = env_int("CELERY_METRICS_PORT", 0, minimum=0, maximum=65535)
    if port:
        from games.infra import metrics

        metrics.start_exporter(port)


@signals.worker_init.connect
def _tracing(**_: Any) -> None:
    """Traces, off unless the OTEL_* variables say so (docs/operations.md#traces): set up in the
    worker's main process, before its pool starts (a prefork child inherits the set-up)."""
    from hearts_service import tracing

    tracing.setup("worker")


@signals.task_postrun.connect
def _connections_back(sender: Any = None, **_: Any) -> None:
    """After each task run by a worker: give the database connection back to the pool (or close it
    when it is broken or past CONN_MAX_AGE), as Django does at the end of a request; so a task
    starts with none (a child killed mid-task is replaced by a new process, which has none either).
    Never for a task run eagerly, inside its caller's transaction (the embedded run, tests)."""
    request = getattr(sender, "request", None)
    if request is not None and not getattr(request, "is_eager", False):
        from django.db import close_old_connections

        close_old_connections()


@signals.task_retry.connect
@signals.task_failure.connect
def _renew_connections(
    reason: BaseException | None = None, exception: BaseException | None = None, **_: Any
) -> None:
    """A task that failed for want of the database (retried, or out of retries): the pool's idle
    connections are tested at once (hearts_service.outages.renew_connections)."""
    from hearts_service import outages

    failure = reason if reason is not None else exception
    if failure is not None:
        outages.renew_connections(failure)


def _connect_task_signals() -> None:
    from hearts_service import observability

    signals.before_task_publish.connect(observability.task_published, weak=False)
    signals.task_prerun.connect(observability.task_started, weak=False)
    signals.task_postrun.connect(observability.task_finished, weak=False)


_connect_task_signals()
