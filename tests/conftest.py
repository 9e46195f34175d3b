"""Makes a CI run fail loudly, rather than skip quietly, when the PostgreSQL or Redis it needs is missing."""

import os
import tempfile
from pathlib import Path
from typing import Any

import dj_database_url
import psycopg
import pytest
import redis

pytest_plugins = ["tests.live"]  # the live-process and replay fixtures of every folder

POSTGRES_ENGINE = "django.db.backends.postgresql"
# Bots play unpaced in the suite, in this process and in the servers and workers it starts (they
# inherit the environment): tests move far faster than people watch. The pace's own tests set it.
os.environ.setdefault("BOT_PACE_MS", "0")
# Expert bots search with a small fixed budget in the suite, for the same reason: the tests check
# legality, replay and hidden information, not strength (bench/ measures that at the default).
os.environ.setdefault("HEARTS_EXPERT_ITERATIONS", "100")
# Archives and exports go to a directory of this test process (and of the servers it starts), never
# to the checkout's var/: parallel processes number their tables alike.
os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="hearts-data-"))


def running_under_ci() -> bool:
    """CI sets CI=true; only then is a missing service an error instead of a reason to skip."""
    return os.environ.get("CI", "").strip().lower() == "true"


def postgres_problem(database_url: str) -> str | None:
    """Say why DATABASE_URL is not a reachable PostgreSQL database, or None when it is."""
    if not database_url:
        return "DATABASE_URL is not set"
    try:
        config = dj_database_url.parse(database_url)
    except ValueError as exc:
        return f"DATABASE_URL cannot be parsed: {exc}"
    if config["ENGINE"] != POSTGRES_ENGINE:
        return f"DATABASE_URL is not a PostgreSQL URL (engine {config['ENGINE']})"
    try:
        with psycopg.connect(
            dbname=config["NAME"] or "postgres",
            user=config.get("USER") or None,
            password=config.get("PASSWORD") or None,
            host=config.get("HOST") or None,
            port=config.get("PORT") or None,
            connect_timeout=5,
        ) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at DATABASE_URL is unreachable: {exc}"
    return None


def redis_problem(redis_url: str) -> str | None:
    """Say why REDIS_URL is not a reachable Redis server, or None when it is."""
    if not redis_url:
        return "REDIS_URL is not set"
    try:
        client = redis.Redis.from_url(redis_url, socket_connect_timeout=3, socket_timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, ValueError) as exc:
        return f"Redis at REDIS_URL is unreachable: {exc}"
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop a CI run before any test if it would silently fall back to SQLite or skip Redis tests."""
    if not running_under_ci():
        return
    problems = [
        problem
        for problem in (
            postgres_problem(os.environ.get("DATABASE_URL", "")),
            redis_problem(os.environ.get("REDIS_URL", "")),
        )
        if problem
    ]
    if problems:
        pytest.exit("CI=true requires real PostgreSQL and Redis: " + "; ".join(problems), returncode=1)


def skip_or_fail(reason: str) -> None:
    """Skip on a developer machine without the service; fail under CI, where it must be present."""
    if running_under_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


# What `make test-fast` leaves out: tests that start real processes (web servers, Celery workers,
# a browser, the image's tools) or play many whole games. Tests that play a whole game through the
# service are marked `@pytest.mark.slow` where they are defined. CI and `make test` run everything.
SLOW_FIXTURES = frozenset({"web", "workers", "live"})
SLOW_FILES = frozenset(
    {
        "test_bot_client.py",
        "test_build.py",  # plays tournaments in subprocesses, with the installed build and the source
        "test_deploy.py",
        "test_docs_examples.py",  # every example of README.md and docs/ on make run's server
        "test_embedded.py",
        "test_fuzz.py",
        "test_load.py",
        "test_proxy.py",  # three web processes behind nginx, one killed mid-hand
        "test_schema_fuzz.py",  # schemathesis: generated requests to every operation
        "test_streams.py",
        "test_subscription_clients.py",  # Node's graphql-ws and Apollo clients, Chromium: whole bot games
        "test_web_client.py",
        "test_workers.py",
    }
)
SLOW_TESTS = (
    "test_whole_game_over_",  # the crawls of every response of whole games
    # The engine's sweeps over every table size and variant, a whole random game each (the fast loop
    # keeps one whole game at the default table; make test-compiled runs them all again, compiled).
    "test_whole_random_games_keep_every_invariant",
    "test_whole_random_cancellation_games_keep_every_invariant",
    # Settings read by a whole started process (the parsers and a bad value of each variable are
    # checked in-process by the fast loop).
    "test_the_production_configuration_passes_check_deploy",
    "test_good_values_in_their_usual_spellings_parse",
    "test_debug_pages_are_refused_in_production_and_off_unless_asked",
    "test_secret_key_is_required_in_production",
    "test_the_command_line_checks_an_export_file",  # manage.py in a process of its own
    "test_a_thinking_time_is_respected_within_a_tolerance",  # bots think for their real time
    # Whole games through the service, in-process (CI plays them; the fast loop keeps the rules).
    "test_a_rated_game_against_bots_moves_the_people_and_never_the_bots",
    "test_an_unrated_table_changes_no_rating",
    "test_a_seat_away_when_the_game_ends_is_placed_last",
    "test_with_people_the_tables_run_one_after_another_on_their_clocks_until_the_standings",
    "test_a_rematch_starts_when_every_person_accepts_with_the_seats_rotated_one_place",
    "test_every_hand_of_a_game_verifies_against_the_commitment_seen_at_its_deal",
    "test_a_two_trick_delay_never_shows_",  # a spectator's crawl of a whole game, two tricks behind
    "test_a_whole_game_against_a_slow_wrong_and_silent_external_bot",  # waits out the bot's timeouts
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"`, do not even import the slow files: every test in them would be
    deselected, and importing some costs seconds (schemathesis builds its tests at collection)."""
    if config.getoption("markexpr") == "not slow" and collection_path.name in SLOW_FILES:
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests (see SLOW_*), so that `-m "not slow"` is the fast inner loop."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SLOW_FIXTURES or item.path.name in SLOW_FILES or item.name.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Apply the needs_postgres / needs_redis markers declared in pyproject.toml."""
    if item.get_closest_marker("needs_postgres"):
        engine = dj_database_url.parse(os.environ.get("DATABASE_URL") or "sqlite://:memory:")["ENGINE"]
        if engine != POSTGRES_ENGINE:
            skip_or_fail("DATABASE_URL does not point at PostgreSQL")
    if item.get_closest_marker("needs_redis"):
        problem = redis_problem(os.environ.get("REDIS_URL", ""))
        if problem:
            skip_or_fail(problem)


REPLAYED_TABLES: list[int] = []  # the finished tables tests/live.py replayed, in this process
_replayed_by_workers: list[int] = []  # under pytest-xdist: each worker's count, in the controller


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its count to the controller (which loads no test directory's conftest)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["replayed_tables"] = len(REPLAYED_TABLES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    _replayed_by_workers.append(getattr(node, "workeroutput", {}).get("replayed_tables", 0))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    total = len(REPLAYED_TABLES) + sum(_replayed_by_workers)
    if total:
        terminalreporter.write_line(f"finished tables replayed from their move logs: {total}")


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis URL for tests that talk to Redis directly."""
    url = os.environ.get("REDIS_URL", "")
    problem = redis_problem(url)
    if problem:
        skip_or_fail(problem)
    return url


@pytest.fixture(autouse=True)
def celery_tasks_run_in_process() -> None:
    """Tasks queued after a commit run at once in the test process, as in the embedded default;
    the tests with a real worker switch this off for themselves."""
    celery_eager(True)


def celery_eager(value: bool) -> None:
    """Run queued tasks in this process (True) or send them to the broker (False). Celery reads a
    setting from Django's settings under its CELERY_ name before its own name: set both."""
    from hearts_service.celery import app

    for name, setting in [("task_always_eager", value), ("task_eager_propagates", True)]:
        app.conf[name] = setting
        app.conf[f"CELERY_{name.upper()}"] = setting


@pytest.fixture(autouse=True)
def bots_unpaced(request: pytest.FixtureRequest) -> None:
    """The default pace of bots at people's tables is 0 here (settings.BOT_PACE_MS; see above),
    whenever Django's settings were read."""
    if request.config.pluginmanager.hasplugin("django"):
        request.getfixturevalue("settings").BOT_PACE_MS = 0


@pytest.fixture(autouse=True)
def rate_limits_off(request: pytest.FixtureRequest) -> None:
    """Tests make requests far faster than people do: limits are off unless a test turns them
    on (tests/api/test_protection.py); live servers started by tests keep them on. (The
    compiled-engine run has no Django: nothing to do there.)"""
    if request.config.pluginmanager.hasplugin("django"):
        request.getfixturevalue("settings").RATE_LIMITS_ENABLED = False
