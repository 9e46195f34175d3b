"""Settings that refuse nonsense (hearts_service/env.py, hearts_service/settings.py).

Every environment variable the service reads is parsed strictly: a flag, number, word or URL that
does not parse stops start-up (`django.setup()` in a fresh interpreter) with ImproperlyConfigured
naming the variable; good values in their usual spellings parse; and the production configuration
that deploy/ sets (the Kubernetes ConfigMap, compose's .env.example) passes
`manage.py check --deploy --fail-level WARNING` with nothing reported and nothing silenced.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from hearts_service.env import env_bool, env_float, env_int, env_list, env_str

ROOT = Path(__file__).resolve().parents[2]
READERS = re.compile(r"env_(?:bool|int|float|str|list)\(\s*\"([A-Z][A-Z0-9_]*)\"")


def variables_read() -> set[str]:
    """Every variable read through hearts_service/env.py, in the service's packages."""
    names: set[str] = set()
    for package in ("hearts_service", "games"):
        for path in (ROOT / package).rglob("*.py"):
            names.update(READERS.findall(path.read_text()))
    return names


def clean_env(**env: str) -> dict[str, str]:
    """This process's environment without any variable the settings read (the suite's own
    DATABASE_URL, REDIS_URL...), plus `env`."""
    read = variables_read() | {"DJANGO_SETTINGS_MODULE"}
    clean = {key: value for key, value in os.environ.items() if key not in read}
    clean.update(env)
    return clean


SETUP = "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'hearts_service.settings'; django.setup()"


def start(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- the parsers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["ture", "2", "nope", "enabled", "y"])
def test_a_flag_that_is_not_a_flag_is_refused_naming_variable_and_value(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=rf"SECURE_SSL_REDIRECT='{raw}'"):
        env_bool("SECURE_SSL_REDIRECT", default=True, environ={"SECURE_SSL_REDIRECT": raw})


@pytest.mark.parametrize(("raw", "value"), [(" 5 ", 5), ("-3", -3), ("0", 0), ("+7", 7)])
def test_whole_numbers_parse(raw: str, value: int) -> None:
    assert env_int("N", 1, environ={"N": raw}) == value


@pytest.mark.parametrize("raw", ["ten", "5.0", "1e3", "5s", "0x10", "1_000"])
def test_a_whole_number_that_is_not_one_is_refused(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"N=.* expected a whole number"):
        env_int("N", 1, environ={"N": raw})


@pytest.mark.parametrize(("raw", "value"), [("5", 5.0), ("0.5", 0.5), (" 1e-3 ", 0.001)])
def test_numbers_parse(raw: str, value: float) -> None:
    assert env_float("S", 1.0, environ={"S": raw}) == value


@pytest.mark.parametrize("raw", ["fast", "5s", "nan", "inf", "-inf", "1,5", "1_0"])
def test_a_number_that_is_not_one_is_refused(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"S=.* expected a number"):
        env_float("S", 1.0, environ={"S": raw})


def test_bounds_are_inclusive_and_named_in_the_message() -> None:
    assert env_int("N", 5, minimum=0, maximum=10, environ={"N": "10"}) == 10
    assert env_float("S", 1.0, minimum=0.5, environ={"S": "0.5"}) == 0.5
    with pytest.raises(ImproperlyConfigured, match=r"N='11' .* from 0 to 10"):
        env_int("N", 5, minimum=0, maximum=10, environ={"N": "11"})
    with pytest.raises(ImproperlyConfigured, match=r"S='0' .* at least 0.5"):
        env_float("S", 1.0, minimum=0.5, environ={"S": "0"})
    with pytest.raises(ImproperlyConfigured, match=r"N='-1' .* at least 1"):
        env_int("N", 5, minimum=1, environ={"N": "-1"})


def test_unset_or_blank_means_the_default_for_every_kind() -> None:
    for environ in ({}, {"X": ""}, {"X": "  "}):
        assert env_bool("X", default=True, environ=environ) is True
        assert env_int("X", 3, minimum=5, environ=environ) == 3  # a default is not checked
        assert env_float("X", 0.5, environ=environ) == 0.5
        assert env_str("X", "text", choices=("json", "text"), environ=environ) == "text"


def test_words_are_one_of_their_choices_after_case_folding() -> None:
    assert env_str("F", "text", choices=("json", "text"), lower=True, environ={"F": " JSON "}) == "json"
    assert env_str("L", "INFO", choices=("INFO", "DEBUG"), upper=True, environ={"L": "debug"}) == "DEBUG"
    with pytest.raises(ImproperlyConfigured, match=r"F='xml' .* one of json, text"):
        env_str("F", "text", choices=("json", "text"), environ={"F": "xml"})


def test_a_pattern_is_matched_whole_and_a_secret_is_never_repeated() -> None:
    rate = {"pattern": r"\d+/\d*(second|minute)", "expected": "a rate"}
    assert env_str("R", "1/minute", environ={"R": "20/10second"}, **rate) == "20/10second"
    with pytest.raises(ImproperlyConfigured, match=r"R='600/minutes' .* a rate"):
        env_str("R", "1/minute", environ={"R": "600/minutes"}, **rate)
    with pytest.raises(ImproperlyConfigured) as refused:
        env_str("U", "", pattern=r"redis://.*", secret=True, environ={"U": "http://user:hunter2@host"})
    assert "U is not valid" in str(refused.value) and "hunter2" not in str(refused.value)


def test_lists_are_read_as_before() -> None:
    assert env_list("H", "a,b", environ={"H": " x, y ,,"}) == ["x", "y"]


# -- start-up refuses nonsense ---------------------------------------------------------------------

BAD = [
    ("SECURE_SSL_REDIRECT", "ture"),  # the example: it used to turn the redirect off silently
    ("DEBUG", "maybe"),
    ("DB_POOL_MAX_SIZE", "ten"),  # read on SQLite too, so a typo is found before PostgreSQL is used
    ("CONN_MAX_AGE", "-5"),
    ("STREAM_POLL_SECONDS", "0"),
    ("GRAPHQL_WS_PING_SECONDS", "10s"),
    ("BOT_PACE_MS", "5000"),
    ("RATE_LIMIT_TOKEN", "600 per minute"),
    ("LOG_FORMAT", "xml"),
    ("HEARTS_ENV", "prod"),
    ("HEARTS_EXPERT_ITERATIONS", "1.2k"),
    ("REDIS_URL", "localhost:6379"),
]


@pytest.mark.parametrize(("name", "raw"), BAD)
def test_a_bad_value_stops_start_up_with_a_message_naming_it(
    name: str, raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings module itself, run in this process on the clean environment plus the bad value
    (the tests below start whole processes: a bad value stops a real start-up the same way)."""
    for variable in list(os.environ):
        monkeypatch.delenv(variable)
    for variable, value in clean_env(**{name: raw}).items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(ImproperlyConfigured) as refused:
        runpy.run_path(str(ROOT / "hearts_service" / "settings.py"))
    assert str(refused.value).startswith("Environment variable " + name), refused.value


def test_a_database_url_that_does_not_parse_is_named_without_its_password() -> None:
    result = start(SETUP, DATABASE_URL="postgress://hearts:hunter2@db/hearts")
    assert result.returncode != 0
    assert "ImproperlyConfigured: Environment variable DATABASE_URL is not valid" in result.stderr
    assert "hunter2" not in result.stderr


def test_a_pool_smaller_than_its_minimum_stops_start_up() -> None:
    result = start(SETUP, DB_POOL_MIN_SIZE="8", DB_POOL_MAX_SIZE="4")
    assert result.returncode != 0 and "DB_POOL_MAX_SIZE=4 is below DB_POOL_MIN_SIZE=8" in result.stderr


DUMP = (
    SETUP
    + """
import json
from django.conf import settings as s
print(json.dumps({
    "ssl": s.SECURE_SSL_REDIRECT, "debug": s.DEBUG, "hsts": s.SECURE_HSTS_SECONDS,
    "pool": s.DATABASES["default"]["OPTIONS"].get("pool"), "poll": s.STREAM_POLL_SECONDS,
    "ping": s.GRAPHQL_WS_PING_SECONDS, "pace": s.BOT_PACE_MS, "rates": s.RATE_LIMITS,
    "format": s.LOG_FORMAT, "level": s.LOG_LEVEL, "env": s.HEARTS_ENV, "hosts": s.ALLOWED_HOSTS,
    "proxy": s.WEBHOOK_PROXY, "webhook_key": s.WEBHOOK_SECRET_KEY == s.SECRET_KEY,
}))
"""
)


def test_good_values_in_their_usual_spellings_parse() -> None:
    result = start(
        DUMP,
        SECURE_SSL_REDIRECT="ON",
        DEBUG=" No ",
        SECURE_HSTS_SECONDS="600",
        DATABASE_URL="postgres://h:s@db.example/h",
        DB_POOL_MIN_SIZE="1",
        DB_POOL_MAX_SIZE=" 4 ",
        DB_POOL_TIMEOUT="2.5",
        STREAM_POLL_SECONDS="1e1",
        GRAPHQL_WS_PING_SECONDS="0.5",
        BOT_PACE_MS="0",
        RATE_LIMIT_TOKEN="20/10second",
        LOG_FORMAT="JSON",
        LOG_LEVEL="warning",
        HEARTS_ENV="Development",
        ALLOWED_HOSTS="a.example, b.example",
        WEBHOOK_PROXY="http://proxy.internal:3128",
        WEBHOOK_SECRET_KEY="",  # blank, as deploy/.env.example leaves it: SECRET_KEY's
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["ssl"] is True and values["debug"] is False and values["hsts"] == 600
    assert values["pool"] == {"min_size": 1, "max_size": 4, "timeout": 2.5, "max_idle": 300.0}
    assert values["poll"] == 10.0 and values["ping"] == 0.5 and values["pace"] == 0
    assert values["rates"]["token"] == "20/10second" and values["rates"]["app"] == "30000/minute"
    assert (values["format"], values["level"], values["env"]) == ("json", "WARNING", "development")
    assert values["hosts"] == ["a.example", "b.example"] and values["proxy"] == "http://proxy.internal:3128"
    assert values["webhook_key"] is True


def test_the_start_up_readers_outside_settings_are_strict_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's metrics port, the embedded worker's switch and the expert bot's budget."""
    from bots import expert
    from games import embedded
    from hearts_service import celery

    monkeypatch.setenv("CELERY_METRICS_PORT", "91OO")
    with pytest.raises(ImproperlyConfigured, match=r"CELERY_METRICS_PORT='91OO'"):
        celery._exporter()
    monkeypatch.setenv("HEARTS_EMBEDDED_WORKER", "yes please")
    with (
        override_settings(REDIS_URL=""),
        pytest.raises(ImproperlyConfigured, match=r"HEARTS_EMBEDDED_WORKER"),
    ):
        embedded.wanted()
    monkeypatch.setenv("HEARTS_EMBEDDED_WORKER", "true")
    with override_settings(REDIS_URL=""):
        assert embedded.wanted() is True
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", "1.2k")
    with pytest.raises(ValueError, match=r"HEARTS_EXPERT_ITERATIONS='1.2k'"):
        expert.iterations()
    monkeypatch.setenv("HEARTS_EXPERT_ITERATIONS", "0")
    with pytest.raises(ValueError, match=r"HEARTS_EXPERT_ITERATIONS='0'"):
        expert.iterations()


def test_settings_read_nothing_from_the_environment_but_through_the_parsers() -> None:
    for path in (ROOT / "hearts_service" / "settings.py", ROOT / "hearts_service" / "asgi.py"):
        assert "os.environ.get" not in path.read_text() and "getenv" not in path.read_text(), path


# -- the production configuration passes check --deploy --------------------------------------------


def production_sets(source: str) -> dict[str, str]:
    """What deploy/ gives every app container, with the secrets a real deployment sets."""
    if source == "k8s":
        env = dict(yaml.safe_load((ROOT / "deploy" / "k8s" / "configmap.yaml").read_text())["data"])
    else:
        env = {}
        for line in (ROOT / "deploy" / ".env.example").read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip()
    assert env["HEARTS_ENV"] == "production" and env["DEBUG"] == "false"
    env.update(
        SECRET_KEY=secrets.token_urlsafe(64),
        DATABASE_URL="postgres://hearts:pw@postgres:5432/hearts",  # check --deploy connects to nothing
        REDIS_URL="redis://redis:6379/0",
    )
    return env


@pytest.mark.parametrize("source", ["k8s", "compose"])
def test_the_production_configuration_passes_check_deploy_with_nothing_silenced(source: str) -> None:
    command = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    result = subprocess.run(
        command,
        cwd=ROOT,
        env=clean_env(**production_sets(source)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
