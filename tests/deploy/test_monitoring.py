"""deploy/monitoring checked with Debian's promtool and against the service's own metrics: the alert
rules pass `promtool check rules` and their unit tests (`promtool test rules`, each alert firing for
a bad series and silent for a good one), the scrape configuration passes `promtool check config`,
every dashboard query parses as PromQL (each one checked by promtool as a recording rule), and every
metric the dashboard and the alerts read is one a live /metrics exports; and the metrics added for
them (the database, Redis and queue gauges, clock lag, webhook attempts, open streams) move as they
should. Under CI=true a missing promtool fails."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.db import OperationalError, connections
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from games import services, tasks
from games.accounts import app_create
from games.infra import metrics, notify
from games.live import fanout
from games.models import Table, WebhookDelivery
from hearts_service.celery import app as celery_app
from tests.conftest import celery_eager, skip_or_fail
from tests.services.test_webhooks import Receiver, bot_game, make_due, receiver, refused_url

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
ALERTS = MONITORING / "alerts.yaml"
DASHBOARD = MONITORING / "dashboard.json"
SCRAPE_CONFIG = MONITORING / "prometheus.yaml"
UNIT_TESTS = sorted((MONITORING / "tests").glob("*.yaml"))
OPERATIONS = ROOT / "docs" / "operations.md"
# Grafana's variables, replaced the way Grafana would before the query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "6h"}
# What Prometheus adds to every target itself (not the service's): `up` (the scrape succeeded).
PROMETHEUS_OWN = {"up"}
PROMQL_WORDS = {
    "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "inf", "nan", "start", "end",
}  # fmt: skip

__all__ = ["receiver"]  # the webhook receivers' fixture, used here as in tests/services/test_webhooks.py


def promtool() -> str:
    """Debian's promtool (package `prometheus`, which .ci/run installs)."""
    found = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").exists() else None)
    if found is None:
        skip_or_fail("promtool is not installed (apt-get install prometheus; .ci/run installs it)")
    return str(found)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, query) of every target of every panel, rows' own panels included."""

    def walk(panels: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for panel in panels:
            yield from walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                yield panel["title"], target["expr"]

    return list(walk(json.loads(DASHBOARD.read_text())["panels"]))


def substituted(query: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        query = query.replace(variable, value)
    assert "$" not in query, f"a Grafana variable left in {query!r}"
    return query


def metric_names(query: str) -> set[str]:
    """The metric names a PromQL expression selects: its identifiers once strings, label matchers,
    ranges and grouping labels are taken out, less function names (followed by a parenthesis)
    and the language's keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', query)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    found = re.findall(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()", text)
    return {name for name in found if name.lower() not in PROMQL_WORDS}


def scrape() -> str:
    response = APIClient().get("/metrics")
    assert response.status_code == 200, response.content
    return response.content.decode()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    """The sample called `name` with exactly `labels` (None when there is none)."""
    return samples(text).get((name, frozenset(labels.items())))


def exported_names(text: str) -> set[str]:
    """Every sample name the families of a scrape can have, from their declared types (a family
    with labels but no sample yet is declared all the same)."""
    suffixes = {
        "counter": ["_total", "_created"],
        "histogram": ["_bucket", "_count", "_sum", "_created"],
        "summary": ["", "_count", "_sum", "_created"],
        "gauge": [""],
    }
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in suffixes.get(family.type, [""]))
    return names


# -- the alert rules ------------------------------------------------------------------------------


def test_the_alert_rules_pass_promtool_check_rules() -> None:
    result = run(promtool(), "check", "rules", str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_the_alert_rules_unit_tests_pass() -> None:
    assert UNIT_TESTS
    result = run(promtool(), "test", "rules", *map(str, UNIT_TESTS), cwd=MONITORING / "tests")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(UNIT_TESTS), result.stdout


def test_every_alert_is_tested_firing_and_silent_labelled_and_documented() -> None:
    fired: set[str] = set()
    silent: set[str] = set()
    for path in UNIT_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else silent).add(check["alertname"])
    names = [rule["alert"] for rule in alert_rules()]
    assert len(names) == len(set(names))
    assert set(names) == fired, "an alert no unit test sees firing (or a test of no alert)"
    assert set(names) == silent, "an alert no unit test sees staying silent"
    operations = OPERATIONS.read_text()
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert {"summary", "description", "runbook"} <= rule["annotations"].keys()
        assert rule["annotations"]["runbook"] == "docs/operations.md#dashboard-and-alerts"
        assert f"`{rule['alert']}`" in operations, (
            f"{rule['alert']} has no runbook line in docs/operations.md"
        )
    assert "## Dashboard and alerts" in operations


def test_promtool_refuses_a_bad_rule_and_a_wrong_expectation(tmp_path: Path) -> None:
    """The checks are real: a rule whose PromQL does not parse fails `check rules`, and a unit test
    expecting an alert that does not fire fails `test rules`."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({"groups": [{"name": "g", "rules": [{"record": "r", "expr": "sum(rate(x[5m])"}]}]})
    )
    result = run(promtool(), "check", "rules", str(bad))
    assert result.returncode != 0 and "parse error" in (result.stdout + result.stderr)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(
        yaml.safe_dump(
            {
                "rule_files": [str(ALERTS)],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": [{"series": "hearts_database_up", "values": "1x10"}],
                        "alert_rule_test": [
                            {
                                "eval_time": "10m",
                                "alertname": "HeartsDatabaseDown",
                                "exp_alerts": [{"exp_labels": {"severity": "page"}}],
                            }
                        ],
                    }
                ],
            }
        )
    )
    result = run(promtool(), "test", "rules", str(wrong))
    assert result.returncode != 0 and "FAILED" in result.stdout + result.stderr


def test_the_scrape_configuration_passes_promtool_check_config_with_the_jobs_the_alerts_name() -> None:
    result = run(promtool(), "check", "config", str(SCRAPE_CONFIG), cwd=MONITORING)
    assert result.returncode == 0, result.stdout + result.stderr
    config = yaml.safe_load(SCRAPE_CONFIG.read_text())
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    assert jobs == {"hearts-web", "hearts-worker"}
    assert config["rule_files"] == ["alerts.yaml"]
    [target_down] = [r for r in alert_rules() if r["alert"] == "HeartsTargetDown"]
    assert all(job in target_down["expr"] for job in jobs)


# -- the dashboard --------------------------------------------------------------------------------


def test_the_dashboard_is_a_grafana_dashboard_with_distinct_panels() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] and board["title"] and board["schemaVersion"] >= 36
    variables = {v["name"] for v in board["templating"]["list"]}
    assert variables == {"datasource"}
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["gridPos"]["x"] >= 0 and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids))
    titles = " ".join(p["title"] for p in board["panels"]).lower()
    for needed in ("requests", "latency", "clock lag", "queue depth", "webhook", "push", "streams open"):
        assert needed in titles, needed


def test_every_dashboard_query_parses_as_promql(tmp_path: Path) -> None:
    """promtool has no query parser of its own on the command line: each query becomes a recording
    rule of a rules file that `promtool check rules` parses (a parse error names the rule)."""
    queries = dashboard_queries()
    rules = [
        {"record": f"hearts:dashboard_query_{n}", "expr": substituted(q)} for n, (_, q) in enumerate(queries)
    ]
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run(promtool(), "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_metric_names_are_read_from_promql() -> None:
    query = (
        "histogram_quantile(0.95, sum by (route, le) ("
        'rate(a_bucket{status=~"5..", x="by(y)"}[5m] offset 1h)))'
        " / on (route) group_left (kind) b_total - 1e3 * c and bool d"
    )
    assert metric_names(query) == {"a_bucket", "b_total", "c", "d"}


@pytest.mark.django_db
@pytest.mark.needs_redis
def test_the_dashboard_and_alerts_read_only_metrics_the_service_exports(
    settings: Any, redis_url: str
) -> None:
    settings.REDIS_URL = redis_url  # the queue gauges come with Redis
    exported = exported_names(scrape()) | PROMETHEUS_OWN
    used = [(title, q) for title, q in dashboard_queries()] + [(r["alert"], r["expr"]) for r in alert_rules()]
    documented = OPERATIONS.read_text()
    for where, query in used:
        names = metric_names(substituted(query))
        assert names, f"{where}: no metric in {query!r}"
        assert names <= exported, f"{where}: {sorted(names - exported)} not exported"
        for name in names - PROMETHEUS_OWN:
            family = re.sub(r"_(bucket|count|sum|total)$", "", name)
            assert f"`{family}" in documented, f"{family} is not in docs/operations.md's metrics"


# -- the metrics the alerts need ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_database_gauge_follows_the_database(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.REDIS_URL = ""
    text = scrape()
    assert value(text, "hearts_database_up") == 1.0
    assert (
        value(text, "hearts_redis_up") is None
        and value(text, "hearts_queue_depth", queue="people", lane="people") is None
    )

    def refuse(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection to server at 10.0.0.5 failed")

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    text = scrape()
    monkeypatch.undo()
    assert value(text, "hearts_database_up") == 0.0
    assert "10.0.0.5" not in text


@pytest.mark.django_db
def test_the_redis_gauge_says_down_when_redis_does_not_answer(settings: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    text = scrape()
    assert value(text, "hearts_redis_up") == 0.0
    assert value(text, "hearts_database_up") == 1.0
    assert value(text, "hearts_queue_depth", queue="people", lane="people") is None


@pytest.mark.django_db
@pytest.mark.needs_redis
def test_queue_depth_and_oldest_task_age_come_from_the_lanes_queues(settings: Any, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    client = notify.shared_redis()
    assert client is not None
    client.delete("bulk")
    try:
        text = scrape()
        assert value(text, "hearts_redis_up") == 1.0
        assert value(text, "hearts_queue_depth", queue="bulk", lane="bulk") == 0.0
        assert value(text, "hearts_queue_oldest_task_age_seconds", queue="bulk", lane="bulk") == 0.0
        queues = {dict(labels)["queue"] for name, labels in samples(text) if name == "hearts_queue_depth"}
        assert queues == {"clocks", "people", "webhooks", "push", "bulk", "hints"} | {
            f"bots.{n}" for n in range(settings.BOT_LANE_QUEUES)
        }
        # Two real task messages, published as the service publishes them (no worker takes them).
        celery_eager(False)
        for _ in range(2):
            celery_app.send_task("games.run_export", args=(0,), queue="bulk")
        celery_eager(True)
        time.sleep(0.3)
        text = scrape()
        assert value(text, "hearts_queue_depth", queue="bulk", lane="bulk") == 2.0
        age = value(text, "hearts_queue_oldest_task_age_seconds", queue="bulk", lane="bulk")
        assert age is not None and 0.3 <= age < 30
        assert value(text, "hearts_queue_depth", queue="people", lane="people") is not None
    finally:
        client.delete("bulk")


@pytest.mark.django_db(transaction=True)  # the lag is observed when the move commits
def test_a_clock_acted_on_late_is_observed_as_clock_lag() -> None:
    guest = APIClient().post("/api/v1/guests", {"name": "g"}, format="json").json()["token"]
    person = APIClient()
    person.credentials(HTTP_AUTHORIZATION=f"Bearer {guest}")
    created = person.post(
        "/api/v1/tables",
        {"options": {"players": 4}, "bots": {"1": "basic", "2": "basic", "3": "basic"}},
        format="json",
    ).json()
    person.post(f"/api/v1/tables/{created['id']}/join", {}, format="json")

    def lag(sample: str, le: str | None = None) -> float:
        [family] = metrics.CLOCK_LAG_SECONDS.collect()
        return next(s.value for s in family.samples if s.name.endswith(sample) and s.labels.get("le") == le)

    before = (lag("_count"), lag("_bucket", "2.5"), lag("_bucket", "5.0"))
    Table.objects.filter(pk=created["id"]).update(deadline=timezone.now() - dt.timedelta(seconds=3))
    assert services.clock_expired(table_id=created["id"]).table is not None
    # One observation, 3 s late: above the 2.5 s bucket (the alert's threshold is 2 s), within 5 s.
    after = (lag("_count"), lag("_bucket", "2.5"), lag("_bucket", "5.0"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 0, 1]
    assert services.clock_expired(table_id=created["id"]).table is None  # nothing late: nothing observed
    assert lag("_count") == after[0]


@pytest.mark.django_db
def test_webhook_attempts_are_counted_by_outcome(receiver: Callable[..., Receiver], settings: Any) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    app, key = app_create(name="counted")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    good = api.post(
        "/api/v1/webhooks", {"url": receiver().url, "event_types": ["game_started"]}, format="json"
    ).json()
    dead = api.post(
        "/api/v1/webhooks", {"url": refused_url(), "event_types": ["game_started"]}, format="json"
    ).json()

    def counted(outcome: str) -> float:
        return value(scrape(), "hearts_webhook_attempts_total", outcome=outcome) or 0.0

    before = {o: counted(o) for o in ("succeeded", "retry", "failed")}
    bot_game(app)  # its start records one game_started delivery per endpoint
    delivered = WebhookDelivery.objects.get(endpoint_id=good["id"])
    make_due(delivered)
    assert tasks.deliver_webhook(str(delivered.uuid)) == "succeeded"
    failing = WebhookDelivery.objects.get(endpoint_id=dead["id"])
    outcomes = []
    for _ in range(2):
        make_due(failing)
        outcomes.append(tasks.deliver_webhook(str(failing.uuid)))
    assert outcomes == ["retry", "failed"]
    assert {o: counted(o) - before[o] for o in before} == {"succeeded": 1, "retry": 1, "failed": 1}


def test_open_streams_are_a_gauge_that_goes_back_down() -> None:
    def open_now(kind: str) -> float:
        [family] = metrics.STREAMS_OPEN.collect()
        return sum(s.value for s in family.samples if s.labels == {"kind": kind})

    async def follow() -> list[tuple[float, float]]:
        seen = [(open_now("table"), open_now("player"))]
        async with fanout.following():
            seen.append((open_now("table"), open_now("player")))
            async with fanout.following(player_id=7):
                seen.append((open_now("table"), open_now("player")))
        seen.append((open_now("table"), open_now("player")))
        return seen

    (t0, p0), *rest = asyncio.run(follow())
    assert rest == [(t0 + 1, p0), (t0 + 1, p0 + 1), (t0, p0)]
