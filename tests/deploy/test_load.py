"""The load-and-faults scenario of bench/load.py at CI size: a production-like stack (uvicorn with
two workers, a Celery worker per lane and beat, a PostgreSQL and a Redis of its own) plays a dozen
tables while the people lane's worker is killed, Redis restarts, a web worker is killed and
PostgreSQL restarts; nothing answers 500, every table finishes or keeps moving, and every move log
replays exactly. Its people ask hints on the way (`--hints 2`): the `hints` lane's worker answers
them over HTTP through the faults."""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]


def test_a_dozen_tables_survive_a_killed_worker_redis_and_postgres_restarts_and_a_killed_web_worker() -> None:
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb") and shutil.which("initdb") is None:
        skip_or_fail("PostgreSQL's server programs (initdb) are not installed")
    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed")
    run = subprocess.run(
        # Games to 50 (the default run's outlast it): within 45 s most end, and the end is checked too.
        [
            *(sys.executable, "bench/load.py", "--tables", "12", "--duration", "45", "--check"),
            *("--hints", "2", "--target", "50", "--bot-target", "50"),
        ],
        cwd=ROOT,
        # The sessions left equal (bench/load.py's AUTOGROUP_NICE): beside the suite's other worker,
        # an advice replica and a hints lane weighed as in production may get no CPU within the run,
        # and this test is about the answers through the faults, not about who goes first.
        env={**os.environ, "LOAD_AUTOGROUP_NICE": "0"},
        capture_output=True,
        text=True,
        timeout=400,
    )
    figures = dict(line.split(": ", 1) for line in run.stdout.splitlines() if ": " in line)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert figures["move_logs_replayed_exactly"] == "12"
    assert int(figures["tables_finished"]) + int(figures["tables_unfinished_still_moving"]) == 12
    assert sum(line.startswith("fault: ") for line in run.stdout.splitlines()) == 4
    assert figures["answers_500"] == "0"
    assert "PROBLEM" not in run.stdout
    answers = figures["hint_answers"]  # "N {'200': n, ...}": hints were asked and answered
    assert int(answers.split()[0]) > 0 and "'200'" in answers, answers


pytestmark = [pytest.mark.needs_postgres, pytest.mark.needs_redis]


def test_the_capacity_search_narrows_the_first_failing_step_to_the_resolution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--capacity`'s steps for a service that holds up to 130 tables: doubling from 10 until 160
    fails, then between the most that held and the fewest that failed until those are within 10%."""
    spec = importlib.util.spec_from_file_location("bench_load", ROOT / "bench" / "load.py")
    assert spec is not None and spec.loader is not None
    load = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, load)  # its dataclasses look their module up
    monkeypatch.setattr(sys, "path", list(sys.path))  # it puts the repository first ...
    monkeypatch.chdir(Path.cwd())  # ... and works from it
    spec.loader.exec_module(load)
    args = argparse.Namespace(step_factor=2.0, max_people=1600, resolution=1.1)
    held, failed, people, steps = 0, 0, 10, []
    while people:
        steps.append(people)
        held, failed, people = load._after_step(args, held, failed, people, people <= 130)
    assert steps == [10, 20, 40, 80, 160, 113, 134, 123]
    assert (held, failed) == (123, 134)
    # Nothing held: no search between; a ceiling that held: none either.
    assert load._after_step(args, 0, 0, 10, False) == (0, 10, 0)
    ceiling = argparse.Namespace(step_factor=2.0, max_people=100, resolution=1.1)
    assert load._after_step(ceiling, 0, 0, 80, True) == (80, 0, 0)
