"""Checks that the project boots, reads its environment as documented, and answers health probes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from hearts_service.env import env_bool, env_list

REPO_ROOT = Path(__file__).resolve().parents[2]

SETTINGS_ENV_VARS = (
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "HEARTS_ENV",
    "ALLOWED_HOSTS",
    "CONN_MAX_AGE",
    "DB_POOL",
    "DB_POOL_MAX_SIZE",
    "LOG_LEVEL",
    "DJANGO_SETTINGS_MODULE",
)

DUMP_SETTINGS = """
import json
from django.conf import settings
from hearts_service import celery_app

db = settings.DATABASES["default"]
cache = settings.CACHES["default"]
print(json.dumps({
    "DEBUG": settings.DEBUG,
    "PRODUCTION": settings.PRODUCTION,
    "SECRET_KEY": settings.SECRET_KEY,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
    "DB_ENGINE": db["ENGINE"],
    "DB_NAME": str(db["NAME"]),
    "DB_HOST": db.get("HOST"),
    "DB_PORT": db.get("PORT"),
    "DB_USER": db.get("USER"),
    "CONN_MAX_AGE": db["CONN_MAX_AGE"],
    "POOL": db.get("OPTIONS", {}).get("pool"),
    "CACHE_BACKEND": cache["BACKEND"],
    "CACHE_LOCATION": cache.get("LOCATION"),
    "BROKER_URL": celery_app.conf.broker_url,
    "RESULT_BACKEND": celery_app.conf.result_backend,
    "ALWAYS_EAGER": celery_app.conf.task_always_eager,
    "LOG_LEVEL": settings.LOGGING["root"]["level"],
    "TIME_ZONE": settings.TIME_ZONE,
    "USE_TZ": settings.USE_TZ,
}))
"""


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    """Import the settings in a fresh interpreter whose environment holds only the given settings vars."""
    clean = {key: value for key, value in os.environ.items() if key not in SETTINGS_ENV_VARS}
    clean["DJANGO_SETTINGS_MODULE"] = "hearts_service.settings"
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", DUMP_SETTINGS],
        cwd=REPO_ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def settings_values(**env: str) -> dict:
    result = load_settings(**env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "Yes", "on", " On "])
def test_env_bool_accepts_the_documented_true_words_in_any_case(raw: str) -> None:
    assert env_bool("FLAG", default=False, environ={"FLAG": raw}) is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", "No", "off", " Off "])
def test_env_bool_accepts_the_documented_false_words_in_any_case(raw: str) -> None:
    # Anything else is refused, not taken as false: tests/service/test_settings.py.
    assert env_bool("FLAG", default=True, environ={"FLAG": raw}) is False


@pytest.mark.parametrize("environ", [{}, {"FLAG": ""}, {"FLAG": "  "}])
def test_env_bool_falls_back_to_the_default_when_unset_or_blank(environ: dict[str, str]) -> None:
    assert env_bool("FLAG", default=True, environ=environ) is True
    assert env_bool("FLAG", default=False, environ=environ) is False


def test_env_list_splits_on_commas_and_drops_spaces_and_empty_items() -> None:
    environ = {"HOSTS": " a.example, b.example ,,c.example, "}
    assert env_list("HOSTS", default="x", environ=environ) == ["a.example", "b.example", "c.example"]


def test_env_list_uses_the_default_only_when_unset() -> None:
    assert env_list("HOSTS", default="x,y", environ={}) == ["x", "y"]
    assert env_list("HOSTS", default="x,y", environ={"HOSTS": ""}) == []


def test_with_nothing_set_the_service_runs_on_sqlite_without_redis() -> None:
    values = settings_values()
    assert values["DEBUG"] is False  # no debug page unless a developer asks with DEBUG=true
    assert values["PRODUCTION"] is False
    assert values["SECRET_KEY"]
    assert values["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]", "testserver"]
    assert values["DB_ENGINE"] == "django.db.backends.sqlite3"
    assert values["DB_NAME"] == str(REPO_ROOT / "db.sqlite3")
    assert values["CONN_MAX_AGE"] == 0
    assert values["CACHE_BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    assert values["BROKER_URL"] == "memory://"
    assert values["RESULT_BACKEND"] == "cache+memory://"
    assert values["ALWAYS_EAGER"] is True
    assert values["LOG_LEVEL"] == "INFO"
    assert values["TIME_ZONE"] == "UTC"
    assert values["USE_TZ"] is True


def test_database_and_redis_urls_switch_the_service_to_postgres_and_redis() -> None:
    values = settings_values(
        DATABASE_URL="postgres://hearts:secret@db.example:6543/hearts",
        REDIS_URL="redis://cache.example:6380/2",
        CONN_MAX_AGE="60",
        SECRET_KEY="production-key",
        HEARTS_ENV="production",
        DEBUG="Off",
        ALLOWED_HOSTS="hearts.example, api.hearts.example",
        LOG_LEVEL="warning",
    )
    assert values["DEBUG"] is False
    assert values["PRODUCTION"] is True
    assert values["SECRET_KEY"] == "production-key"
    assert values["ALLOWED_HOSTS"] == ["hearts.example", "api.hearts.example"]
    assert values["DB_ENGINE"] == "django.db.backends.postgresql"
    assert values["DB_NAME"] == "hearts"
    assert values["DB_HOST"] == "db.example"
    assert values["DB_PORT"] == 6543
    assert values["DB_USER"] == "hearts"
    # Django's psycopg pool by default: it keeps the connections, so none is kept per thread.
    assert values["CONN_MAX_AGE"] == 0
    assert values["POOL"]["max_size"] == 10
    assert values["CACHE_BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert values["CACHE_LOCATION"] == "redis://cache.example:6380/2"
    assert values["BROKER_URL"] == "redis://cache.example:6380/2"
    assert values["RESULT_BACKEND"] == "redis://cache.example:6380/2"
    assert values["ALWAYS_EAGER"] is False
    assert values["LOG_LEVEL"] == "WARNING"


def test_secret_key_is_required_in_production() -> None:
    result = load_settings(HEARTS_ENV="production")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY must be set" in result.stderr


def test_debug_pages_are_refused_in_production_and_off_unless_asked() -> None:
    result = load_settings(HEARTS_ENV="production", SECRET_KEY="k" * 50, DEBUG="true")
    assert result.returncode != 0 and "DEBUG must stay off" in result.stderr
    assert settings_values(DEBUG="true")["DEBUG"] is True


def test_django_system_checks_pass(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("check")
    assert "no issues" in capsys.readouterr().out


def test_healthz_reports_ok_as_json() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}


@pytest.mark.needs_postgres
@pytest.mark.django_db
def test_a_postgres_database_url_connects_to_postgresql() -> None:
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


def test_the_connection_pool_is_bounded_and_can_be_turned_off_for_pgbouncer() -> None:
    pooled = settings_values(DATABASE_URL="postgres://h:s@db.example/h", DB_POOL_MAX_SIZE="4")
    assert pooled["POOL"]["max_size"] == 4 and pooled["CONN_MAX_AGE"] == 0
    unpooled = settings_values(DATABASE_URL="postgres://h:s@db.example/h", DB_POOL="false", CONN_MAX_AGE="60")
    assert unpooled["POOL"] is None and unpooled["CONN_MAX_AGE"] == 60
