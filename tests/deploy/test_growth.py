"""bench/growth.py stays runnable: at CI size (200 finished games copied from 20 played) it prints
every figure, and it refuses to run anywhere but PostgreSQL. Its times are never asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import dj_database_url
import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("bare", "play", "table_list", "lobby", "my_tables", "leaderboard", "export", "export_archived")
FIGURES = [
    "games",
    "pool_games",
    "records_api",
    "pool_seconds",
    "pool_moves_per_game",
    "bytes_per_game_hot_rows",
    "bytes_per_game_hot_move_log",
    "pool_sealed",
    "bytes_per_game_sealed_pool",
    "archived_sample",
    "bytes_per_game_archived",
    "fill_seconds",
    "fill_rows",
    "fill_rows_per_s",
    "fill_games_per_s",
    "analyze_seconds",
    "bytes_per_game_sealed",
    "database_bytes",
    "regular_tables",
    "app_tables",
    "app_ratings",
    "requests_per_kind",
    *(
        f"{kind}_{figure}"
        for kind in KINDS
        for figure in (
            "p50_ms_empty",
            "p50_ms",
            "p99_ms_empty",
            "p99_ms",
            "p50_ratio",
            "p99_ratio",
        )
    ),
    *(f"{kind}_{q}_ratio_vs_bare" for kind in KINDS[1:] for q in ("p50", "p99")),
]
# Only the sizes are given: every other setting is the default, as in tests/deploy/test_bench.py.
SETTINGS = ("DATABASE_URL", "REDIS_URL", "DEBUG", "HEARTS_ENV", "RATE_LIMITS_ENABLED", "LOG_LEVEL")


def run_growth(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS and not k.startswith("RATE_LIMIT")}
    return subprocess.run(
        [sys.executable, "bench/growth.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.needs_postgres
def test_the_growth_benchmark_prints_every_figure_at_ci_size() -> None:
    """200 copies of 20 engine-played games, sealed, a sample archived, the requests timed before
    and after the fill; its scratch database (growth_<pid>) is created and dropped by the run."""
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    server = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/postgres"
    result = run_growth("--games", "200", "--pool", "20", DATABASE_URL=server)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    figures = dict(re.findall(r"^([a-z][a-z0-9_]*): (-?[0-9.]+)$", result.stdout, flags=re.MULTILINE))
    missing = [name for name in FIGURES if name not in figures]
    assert not missing, f"bench/growth.py printed no {missing}: {result.stdout[-2000:]}"
    values = {name: float(figures[name]) for name in FIGURES}
    assert values["games"] == 200 and values["pool_games"] == 20 and values["records_api"] == 1
    assert values["pool_sealed"] == 20 and values["archived_sample"] == 10
    assert all(values[name] > 0 for name in FIGURES if name.startswith(("bytes_", "fill_")))
    # Says what the games are: copies of the pool, not N distinct games.
    assert "copies of 20 engine-played games" in result.stdout
    scratch = re.search(r"^# scratch database (growth_\d+)", result.stdout, flags=re.MULTILINE)
    assert scratch is not None
    with psycopg.connect(server) as conn:
        left = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [scratch[1]]).fetchall()
    assert left == []


def test_the_growth_benchmark_refuses_sqlite() -> None:
    """Its figures are about PostgreSQL: without a PostgreSQL DATABASE_URL it says so and exits."""
    result = run_growth("--games", "10", "--pool", "4")
    assert result.returncode == 2
    assert "the figures are about PostgreSQL" in result.stderr and "DATABASE_URL" in result.stderr
    assert not re.search(r"^[a-z_]+: ", result.stdout, flags=re.MULTILINE)
