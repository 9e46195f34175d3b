"""The embedded worker of a one-machine run without Redis: bot moves run in-process after each
commit (Celery's eager mode), and this thread runs the sweep every second for the turn clocks
and, every TICK, the paced bot moves that came due (games.infra.jobs.run_due); a second thread
runs the housekeeping (sealing, archives, expired exports) once a minute, so it never holds up
a clock."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from django.conf import settings
from django.db import close_old_connections

from games.infra import jobs
from games.tasks import HOUSEKEEPING_SECONDS, housekeeping, sweep
from hearts_service.env import env_bool

log = logging.getLogger(__name__)
TICK = 0.05  # seconds between two looks at the paced bot moves
_started = threading.Event()


def wanted() -> bool:
    """True in the serving process of a run without REDIS_URL (runserver's reloaded child, or
    any server started with HEARTS_EMBEDDED_WORKER=1); never in tests or management commands."""
    if settings.REDIS_URL:
        return False
    if env_bool("HEARTS_EMBEDDED_WORKER", default=False):
        return True
    return "runserver" in sys.argv and (os.environ.get("RUN_MAIN") == "true" or "--noreload" in sys.argv)


def start(interval: float = 1.0) -> None:
    """Start the sweeping thread once per process."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_loop, args=(interval,), name="hearts-embedded-sweep", daemon=True).start()
    threading.Thread(target=_housekeeping, name="hearts-embedded-housekeeping", daemon=True).start()
    log.info("embedded worker: turn clocks swept every %.1fs, bots play in-process", interval)


def _loop(interval: float) -> None:
    next_sweep = time.monotonic() + interval
    while True:
        time.sleep(TICK)
        try:
            jobs.run_due()
            if time.monotonic() >= next_sweep:
                next_sweep += interval
                sweep(inline=True)
        except Exception:  # keep sweeping: one failed round must not stop the clocks
            log.exception("embedded sweep failed")
        finally:
            close_old_connections()


def _housekeeping() -> None:
    while True:
        time.sleep(HOUSEKEEPING_SECONDS)
        try:
            housekeeping()
        except Exception:  # try again next minute: a failed round must not stop the thread
            log.exception("embedded housekeeping failed")
        finally:
            close_old_connections()
