"""The suite on both cores: a Redis database for each pytest-xdist worker, and the longest test files first.

Loaded with `-p tests.parallel` (Makefile), it is imported before pytest-django reads the settings,
which is the only moment REDIS_URL can still be changed: every cache, broker and result backend the
settings build from it, and every server and Celery worker a test starts (they inherit the
environment), then use that worker's database. Queues, turn clocks, rate-limit counters and
idempotency keys live in keys, so two databases never see each other's. PostgreSQL needs nothing
here: pytest-django already gives each xdist worker its own test database (`test_<name>_gw0`, ...).
Stream wake-ups go over pub/sub, whose channels are not per database, so they carry the database's
number too (games.infra.notify). Without xdist, or without REDIS_URL, this changes nothing.

It also refuses a collection in which two tests share a nodeid (xdist would run only one of them)
and, in a run that hands whole files to its workers (`--dist loadfile --no-loadscope-reorder`, as
`make test` does), puts the longest files first, by the seconds each took in a recorded run
(tests/durations.json, written by `record`):

    python -m tests.parallel report.xml   # tests/durations.json from a run's --junitxml report
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

REDIS_DATABASES = 16  # Redis's default `databases`
DURATIONS = Path(__file__).with_name("durations.json")


def worker_redis_url(url: str, worker: str) -> str:
    """`url` moved to the database after its own by the worker's number: gw0 -> +1, gw1 -> +2, ..."""
    match = re.fullmatch(r"gw(\d+)", worker)
    if not match:
        raise ValueError(f"not a pytest-xdist worker id: {worker!r}")
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not re.fullmatch(r"(/\d*)?", parts.path):
        raise ValueError(f"REDIS_URL {url!r} is not redis://host[:port][/db]")
    database = int(parts.path.strip("/") or 0) + 1 + int(match.group(1))
    if database >= REDIS_DATABASES:
        raise ValueError(f"REDIS_URL {url!r} leaves no database {database} for worker {worker}")
    return urlunsplit(parts._replace(path=f"/{database}"))


_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Two tests with one nodeid are one test to pytest-xdist's schedulers, which then silently run
    only one of them (seen with pytest 9.2 and schemathesis 4: see pyproject.toml): refuse to start."""
    counts = Counter(item.nodeid for item in session.items)
    shared = [nodeid for nodeid, n in counts.items() if n > 1]
    if shared:
        raise pytest.UsageError(f"{len(shared)} nodeids name more than one test, e.g. {shared[0]}")


def pytest_report_header(config: pytest.Config) -> str | None:
    if _worker and os.environ.get("REDIS_URL"):
        return f"{_worker}: Redis at {os.environ['REDIS_URL']}"
    return None


# xdist hands whole files to its workers in the collection's order, two at a time each, and by
# default reorders them by their number of tests, which says little of their time here: the image
# build (one test), the load run (one) and the fuzzers (a few) take minutes, and coming last they
# left two workers idle while the third finished them (the slow half of stop 60's CI took 846 s;
# run alone on 2026-12-07, 773 s for 1,965 s of work: 655 s in a simulation with the longest
# first, and 667 s in a CI with them first). So the longest go first, by the seconds of a recorded
# run; a file not in the record counts as the record's median.
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if getattr(config.option, "dist", "no") != "loadfile" or not DURATIONS.exists():
        return
    seconds: dict[str, float] = json.loads(DURATIONS.read_text())
    known = sorted(seconds.values())
    median = known[len(known) // 2] if known else 0.0
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(_file(item), index)
    items.sort(key=lambda item: (-seconds.get(_file(item), median), first[_file(item)]))


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def record(report: Path) -> dict[str, float]:
    """Each test file's seconds (setup, call and teardown) in a pytest --junitxml report."""
    seconds: dict[str, float] = {}
    for case in ET.parse(report).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        while parts and parts[-1][:1].isupper():  # a test class's name, not the module's
            parts.pop()
        path = "/".join(parts) + ".py"
        seconds[path] = seconds.get(path, 0.0) + float(case.get("time") or 0)
    return {path: round(s, 1) for path, s in sorted(seconds.items())}


if __name__ == "__main__":
    DURATIONS.write_text(json.dumps(record(Path(sys.argv[1])), indent=1) + "\n")
