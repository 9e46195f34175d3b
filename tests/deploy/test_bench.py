"""Every benchmark stays runnable: each `bench/*.py` runs for a few seconds under the default settings
(nothing set but its size) and prints its figures as `name: value` lines. `bench/load.py` is run by
tests/deploy/test_load.py at CI size."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dj_database_url
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {
    "api.py": ["play_ms", "bare_write_ms", "play_vs_bare_write_ratio", "queries_per_play"],
    "graphql.py": ["graphql_play_ms", "graphql_play_vs_bare_ratio", "graphql_queries_per_play"],
    "engine.py": ["random_hands_per_s_4p", "legal_actions_per_s"],
    "workers.py": [
        "engine_games_per_min",
        "full_stack_games_per_min",
        "timeout_lag_p99_ms",
        "engine_move_cpu_us",
        "bot_move_cpu_us",
        "bot_move_vs_engine_ratio",
        "clock_move_cpu_us",
        "clocks_measured",
        "catch_up_batched_vs_one_by_one_ratio",
        "catch_up_batched_vs_one_by_one_ratio_2_busy",
    ],
    "streams.py": ["redis_connections", "rss_per_stream_kb", "latency_p99_ms", "db_reads_per_change"],
    "subscriptions.py": [
        "redis_connections",
        "rss_per_subscription_kb",
        "latency_p99_ms",
        "sse_rss_per_stream_kb",
        "socket_play_vs_http_post_ratio",
    ],
    "ratings.py": [
        "plackett_luce_kendall_tau",
        "plackett_luce_us_per_update",
        "bradley_terry_full_time_vs_plackett_luce",
        "basic_minus_random_mu",
    ],
    "vs_openspiel.py": ["openspiel_installed"],
    "requests.py": [
        "request_cpu_us_kept",
        "request_cpu_us_new_thread",
        "request_kept_vs_new_thread_ratio",
        "request_cpu_us_django_chain",
        "request_sync_chain_vs_django_chain_ratio",
    ],
    "broker.py": [
        "publish_cpu_us_kombu",
        "publish_cpu_us_ours",
        "publish_ours_vs_kombu_ratio",
        "publish_cpu_us_staged",
        "publish_staged_vs_ours_ratio",
        "staged_making_cpu_us",
    ],
    "ratelimit.py": [
        "ratelimit_cpu_us_one_trip",
        "ratelimit_cpu_us_two_trips",
        "ratelimit_one_vs_two_trips_ratio",
    ],
    "state_column.py": ["state_bytes", "jsonb_write_us", "text_write_us", "text_vs_jsonb_write_ratio"],
    "state_json.py": ["state_bytes", "write_us", "write_vs_json_module_ratio", "read_vs_json_module_ratio"],
    "hints.py": ["hint_p50_ms", "hint_p95_ms", "read_p50_ms", "hint_p50_vs_read_ratio"],
    "embedded.py": [
        "sdk_game_rest_sse_s",
        "sdk_game_socket_s",
        "sdk_game_async_s",
        "create_four_strong_bots_answer_ms",
        "create_four_strong_bots_vs_bare_ratio",
    ],
}
SMALL = {  # sizes only: every benchmark reads these, and nothing else is set
    "BENCH_ROUNDS": "1",
    "BENCH_PLAYS": "5",
    "BENCH_SECONDS": "0.1",
    "BENCH_GAMES": "1",
    "BENCH_LAG_TABLES": "2",
    "BENCH_CLOCK_TABLES": "2",
    "BENCH_CATCH_UP_TABLES": "2",
    "BENCH_CATCH_UP_ROUNDS": "1",
    "BENCH_CLOCK": "5",
    "BENCH_DEALS": "2",
}
SETTINGS = (
    "DATABASE_URL",
    "REDIS_URL",
    "DEBUG",
    "HEARTS_ENV",
    "RATE_LIMITS_ENABLED",
    "LOG_LEVEL",
    "HEARTS_EXPERT_ITERATIONS",
)
pytestmark = pytest.mark.slow


def run(bench: str, *args: str, **env: str) -> dict[str, float]:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS and not k.startswith("RATE_LIMIT")}
    result = subprocess.run(
        [sys.executable, f"bench/{bench}", *args],
        cwd=ROOT,
        env={**clean, **SMALL, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    figures = dict(re.findall(r"^([a-z][a-z0-9_]*): (-?[0-9.]+)$", result.stdout, flags=re.MULTILINE))
    missing = [name for name in FIGURES[bench] if name not in figures]
    assert not missing, f"bench/{bench} printed no {missing}: {result.stdout[-2000:]}"
    return {name: float(value) for name, value in figures.items()}


def test_every_benchmark_has_a_smoke_run() -> None:
    # load.py and growth.py have files of their own: tests/deploy/test_load.py and test_growth.py.
    assert {p.name for p in (ROOT / "bench").glob("*.py")} == {*FIGURES, "load.py", "growth.py"}


@pytest.mark.parametrize(
    "bench", ["api.py", "graphql.py", "engine.py", "ratings.py", "requests.py", "hints.py", "state_json.py"]
)
def test_a_benchmark_runs_under_the_default_settings(bench: str) -> None:
    figures = run(bench)
    assert all(value >= 0 for value in figures.values())


@pytest.mark.needs_redis
def test_the_broker_benchmark_publishes_through_both_transports(redis_url: str) -> None:
    """Unset, REDIS_URL is the machine's Redis, database 15; here the test run's own database."""
    figures = run("broker.py", REDIS_URL=redis_url)
    assert figures["publish_cpu_us_kombu"] > 0 and figures["publish_cpu_us_ours"] > 0
    assert figures["publish_cpu_us_staged"] > 0


@pytest.mark.needs_redis
def test_the_rate_limit_benchmark_counts_both_ways(redis_url: str) -> None:
    """Unset, REDIS_URL is the machine's Redis, database 15; here the test run's own database."""
    figures = run("ratelimit.py", REDIS_URL=redis_url)
    assert figures["ratelimit_cpu_us_one_trip"] > 0 and figures["ratelimit_cpu_us_two_trips"] > 0


def test_the_embedded_benchmark_plays_whole_games_on_its_own_make_run_server() -> None:
    """One game per client kind on a server it starts itself (SQLite in a temporary directory): the
    table of four strong bots is answered before any of them moved (version 5: the start)."""
    figures = run("embedded.py")
    assert figures["games_per_kind"] == 1 and figures["four_strong_bots_version_at_answer"] == 5
    assert all(value > 0 for value in figures.values())


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_hints_benchmark_runs_on_a_served_stack() -> None:
    """`--served`: bench/load.py's stack of its own (PostgreSQL's server programs and redis-server),
    the hints asked over HTTP and computed by the `hints` lane's Celery worker."""
    figures = run("hints.py", "--served")
    assert figures["hints_asked"] == 5 and figures["hint_p95_ms"] > 0


@pytest.mark.needs_postgres
def test_the_state_column_benchmark_runs_on_a_postgresql_of_its_own() -> None:
    """Under the default settings (no DATABASE_URL) it starts bench/load.py's PostgreSQL; both
    columns get the same state, and a thousand writes cost the backend some CPU (the kernel counts
    it in 10-ms ticks: a thousand reads may round to none)."""
    figures = run("state_column.py", BENCH_PLAYS="1000")
    assert figures["state_bytes"] > 500
    assert figures["jsonb_write_us"] > 0 and figures["text_write_us"] > 0
    assert figures["jsonb_read_us"] >= 0 and figures["text_read_us"] >= 0


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_workers_benchmark_runs_on_postgres_and_redis(redis_url: str) -> None:
    """It needs PostgreSQL and Redis (it says so and exits otherwise); its scratch database is its
    own (`test_bench_smoke`), never the test run's."""
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/bench_smoke"
    figures = run("workers.py", DATABASE_URL=url, REDIS_URL=redis_url)
    assert figures["full_stack_games_per_min"] > 0
    assert figures["clocks_measured"] == 4 and figures["clock_move_cpu_us"] > 0  # two tables' two clocks
    for busy in ("", "_2_busy"):  # (each way acted on every table, or the run fails)
        assert figures[f"catch_up_one_by_one_ms_per_table{busy}"] > 0
        assert figures[f"catch_up_batched_ms_per_table{busy}"] > 0


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_streams_benchmark_runs_on_postgres_and_redis(redis_url: str) -> None:
    """40 streams over 4 tables for 2 s per phase, on a scratch database of its own."""
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/bench_streams_smoke"
    figures = run(
        "streams.py",
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        BENCH_STREAMS="40",
        BENCH_TABLES="4",
        BENCH_STREAM_SECONDS="2",
    )
    # Streams share one pub/sub connection per process; the rest are the pooled clients of the rate
    # limiter, the cache and the wake-up publisher, bounded by the thread pool, not by the streams
    # (a run under load saw 6). One per stream would be 40 or more.
    assert figures["redis_connections"] <= 40 // 4 and figures["events_delivered"] > 0


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_subscriptions_benchmark_runs_on_postgres_and_redis(redis_url: str) -> None:
    """40 subscriptions (and then 40 SSE streams) over 4 tables for 2 s per phase, and 5 plays of each
    kind over the socket and over HTTP, on a scratch database of its own."""
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    url = f"postgres://{db['USER']}@{host}/bench_subscriptions_smoke"
    figures = run(
        "subscriptions.py",
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        BENCH_STREAMS="40",
        BENCH_TABLES="4",
        BENCH_STREAM_SECONDS="2",
    )
    # One pub/sub connection per process and the bounded pool, not one per subscription.
    assert figures["redis_connections"] <= 40 // 4 and figures["events_delivered"] > 0
    assert figures["sse_events_delivered"] > 0 and figures["plays_per_kind"] == 5


def test_our_bot_against_openspiel_ismcts() -> None:
    """Two deal sets (8 hands) of `strong` against OpenSpiel's ISMCTS at 600 simulations, both
    engines in lockstep (the benchmark asserts their legal sets agree at every step and that
    OpenSpiel's returns are our points). Without OpenSpiel installed it says so and exits cleanly."""
    figures = run("vs_openspiel.py")
    if importlib.util.find_spec("pyspiel") is None:
        assert figures == {"openspiel_installed": 0.0}
        return
    assert figures["openspiel_installed"] == 1 and figures["hands"] == 8 and figures["ismcts_sims"] == 600
    assert figures["candidate_ms_per_card"] > 0 and figures["ismcts_ms_per_card"] > 0
    # Every hand hands out 26 points (a moon scored as "add" gives 78, as "subtract" -26).
    total = figures["candidate_points_per_hand"] + 3 * figures["ismcts_points_per_hand"]
    assert -26 <= total <= 78
    assert figures["gap_ci95_low"] <= figures["gap_points_per_hand"] <= figures["gap_ci95_high"]


def test_two_runs_against_ismcts_compare_on_their_common_deals(tmp_path: Path) -> None:
    """`--paired` subtracts the second run's per-deal gaps from the first's over the deal sets both
    played, and refuses runs on different seeds (different deals)."""
    first, second, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text(json.dumps({"seed": 11, "per_deal_gaps": [1.0, 2.0, 3.0]}))
    second.write_text(json.dumps({"seed": 11, "per_deal_gaps": [0.0, 1.0, 1.0, 5.0]}))
    other.write_text(json.dumps({"seed": 12, "per_deal_gaps": [0.0, 1.0, 1.0]}))
    command = [sys.executable, "bench/vs_openspiel.py", "--paired"]
    result = subprocess.run([*command, str(first), str(second)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    # Differences 1, 1, 2: mean 4/3, standard deviation 1/sqrt(3), half-width 1.96/3.
    assert result.stdout.splitlines() == [
        "paired_deal_sets: 3",
        "paired_gap_difference: 1.333",
        "paired_ci95_low: 0.680",
        "paired_ci95_high: 1.987",
    ]
    refused = subprocess.run([*command, str(first), str(other)], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "different seeds" in refused.stderr


def _part(
    first_deal: int, gaps: list[float], hands: int, ours: float, **changes: object
) -> dict[str, object]:
    """The JSON of one part of a run against ISMCTS, as `--json` writes it."""
    return {
        "candidate": "expert",
        "ismcts_sims": 900,
        "uct_c": 2.0,
        "seed": 7,
        "deal_sets": len(gaps),
        "first_deal": first_deal,
        "per_deal_gaps": gaps,
        "hands": hands,
        "candidate_points_per_hand": ours,
        "ismcts_points_per_hand": (26 - ours) / 3,
        "timing": {"ours_seconds": 1.0, "ours_cards": 10, "ismcts_seconds": 6.0, "ismcts_cards": 30},
        "moons": 1,
        "seconds": 50.0,
        "calibration": {},
        **changes,
    }


def test_a_run_played_in_parts_combines_into_the_figures_of_the_whole(tmp_path: Path) -> None:
    """`--combine` joins parts (deal-set ranges of one seed, `--first-deal`) into one run; it refuses
    parts of different runs, overlapping parts and a hole; `--paired` matches deal sets by number."""
    files = []
    for name, part in {
        "b": _part(2, [3.0, 6.0], 8, 5.0),
        "a": _part(0, [1.0, 2.0], 8, 3.0, calibration={"candidate_ms_per_card": 30.0}),
    }.items():
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(part))
    command = [sys.executable, "bench/vs_openspiel.py"]
    whole = tmp_path / "whole.json"
    combined = subprocess.run(
        [*command, "--combine", *map(str, files), "--json", str(whole)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert combined.returncode == 0, combined.stderr[-2000:]
    result = json.loads(whole.read_text())
    assert result["per_deal_gaps"] == [1.0, 2.0, 3.0, 6.0] and result["first_deal"] == 0
    assert result["deal_sets"] == 4 and result["hands"] == 16 and result["moons"] == 2
    assert result["gap"] == 3.0 and result["candidate_points_per_hand"] == 4.0  # hands-weighted
    assert result["candidate_ms_per_card"] == 100.0 and result["ismcts_ms_per_card"] == 200.0
    assert result["time_ratio"] == 2.0 and result["calibration"] == {"candidate_ms_per_card": 30.0}
    assert "gap_points_per_hand: 3.000" in combined.stdout
    for bad, message in [
        (_part(4, [1.0], 4, 3.0, ismcts_sims=800), "differ in ismcts_sims"),
        (_part(3, [1.0], 4, 3.0), "played twice"),
        (_part(5, [1.0], 4, 3.0), "missing"),
    ]:
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        refused = subprocess.run(
            [*command, "--combine", *map(str, files), str(tmp_path / "bad.json")],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert refused.returncode != 0 and message in refused.stderr, refused.stderr
    # Paired by deal set number: the part from deal set 2 against the whole run.
    paired = subprocess.run(
        [*command, "--paired", str(files[0]), str(whole)], cwd=ROOT, capture_output=True, text=True
    )
    assert paired.returncode == 0 and "paired_deal_sets: 2" in paired.stdout
    assert "paired_gap_difference: 0.000" in paired.stdout
