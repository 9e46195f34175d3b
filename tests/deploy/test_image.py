"""The shipped image built from deploy/Dockerfile, every role run inside it as compose and Kubernetes run it.

The image is built with podman (`--isolation=chroot`: no daemon) on a Debian base made by
`.ci/image-base`. Each role gets a working container of its own (`buildah from`) and runs with
`buildah run`, as the image's user, on the host's network, against the host's PostgreSQL (a fresh
database) and Redis: the migrate command and the init containers' `migrate --check`, the web with the
image's default command, a Celery worker per lane and beat, their commands read from
`docker-compose config` of deploy/compose.yaml (and the Kubernetes manifests checked to be the same).
Then a bot-only game (the bots lane) and a person's game against bots with a turn clock (the people
and clocks lanes) are played through the served API, and the probes, /metrics, the workers' metrics
and the static files are checked. Under CI=true a missing tool or a failed build fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dj_database_url
import httpx
import psycopg
import pytest
import yaml

from games.infra import jobs
from tests.conftest import running_under_ci, skip_or_fail
from tests.deploy.test_deploy import compose_copy, k8s, k8s_documents, tool

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / ".ci" / "containers.conf"
BASE_IMAGE = os.environ.get("HEARTS_BASE_IMAGE", "localhost/debian-python:bookworm")
IMAGE = "localhost/hearts-service:test"
WORKERS = [f"worker-{lane}" for lane in jobs.LANES]
ROLES = ["migrate", "web", *WORKERS, "beat"]
# The Kubernetes object and container that plays each compose service's role.
K8S_ROLES = {
    "migrate": ("Job", "hearts-migrate"),
    "web": ("Deployment", "hearts-web"),
    **{name: ("Deployment", f"hearts-{name}") for name in WORKERS},
    "beat": ("Deployment", "hearts-beat"),
}
BUILD_SECONDS = 1800  # a cold build: apt, PyPI and the mypyc compile


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def run(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, env=podman_env(), capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if check:
        assert result.returncode == 0, (
            f"{' '.join(args[:4])} ...: {result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return result


# -- the commands: compose's, checked equal to Kubernetes' ---------------------------------------


@dataclass
class Role:
    command: list[str] | None  # None: the image's default command
    environment: dict[str, str]
    healthcheck: list[str] | None  # the health check's command line (CMD or CMD-SHELL), if any


def compose_roles(tmp_path: Path) -> dict[str, Role]:
    """Each app service's command and environment as Debian's docker-compose resolves them (with a
    .env made from .env.example), `$$` unescaped: what compose hands the container."""
    compose = tool("docker-compose")
    path = compose_copy(tmp_path)
    result = subprocess.run([compose, "-f", str(path), "config"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    services = yaml.safe_load(result.stdout)["services"]

    def unescape(value: Any) -> str:
        return str(value).replace("$$", "$")

    roles = {}
    for name in ROLES:
        service = services[name]
        command = service.get("command")
        test = [unescape(part) for part in service.get("healthcheck", {}).get("test", [])]
        roles[name] = Role(
            command=None if command is None else [unescape(part) for part in command],
            environment={key: unescape(value) for key, value in service["environment"].items()},
            healthcheck=["sh", "-c", test[1]] if test[:1] == ["CMD-SHELL"] else test[1:] or None,
        )
    return roles


def k8s_container(role: str) -> dict[str, Any]:
    kind, name = K8S_ROLES[role]
    [container] = k8s(kind, name)["spec"]["template"]["spec"]["containers"]
    return container


def init_command() -> list[str]:
    """The command every Deployment's init container runs (they are all the same)."""
    commands = {
        json.dumps(init["command"])
        for doc in k8s_documents()
        if doc["kind"] == "Deployment"
        for init in doc["spec"]["template"]["spec"]["initContainers"]
    }
    assert len(commands) == 1, commands
    return list(json.loads(commands.pop()))


def test_compose_and_kubernetes_run_exactly_the_same_commands(tmp_path: Path) -> None:
    roles = compose_roles(tmp_path)
    assert roles["web"].command is None, "the web runs the image's default command"
    for role, spec in roles.items():
        container = k8s_container(role)
        assert "args" not in container, role
        assert container.get("command") == spec.command, role
        # Kubernetes expands $(NAME) in commands; compose would not: none may appear.
        assert "$(" not in " ".join(spec.command or []), role
    for name in WORKERS:
        container = k8s_container(name)
        k8s_env = {e["name"]: e["value"] for e in container.get("env", [])}
        for key in ("WORKER_QUEUES", "WORKER_NAME"):
            assert k8s_env[key] == roles[name].environment[key] == name.removeprefix("worker-"), name
        # the liveness probe is compose's health check
        assert container["livenessProbe"]["exec"]["command"] == roles[name].healthcheck, name
    assert "migrate" in roles["migrate"].command and "--check" in " ".join(init_command())


# -- building the image ------------------------------------------------------------------------


@dataclass
class Built:
    image: str
    seconds: float
    size: int
    config: dict[str, Any]
    healthcheck: dict[str, Any]


def ca_bundle() -> str:
    """The host's trusted CA bundle, handed to the build's pip step (a TLS-intercepting proxy's CA)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (os.environ.get("PIP_CERT"), paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no CA bundle on this host")


@pytest.fixture(scope="module")
def image() -> Built:
    """Make sure of the tools and the base image (.ci/image-base; under CI it installs what is
    missing), then build deploy/Dockerfile; layers are reused from the previous build."""
    have_tools = all(shutil.which(name) for name in ("podman", "buildah"))
    if running_under_ci() or (have_tools and os.geteuid() == 0):
        base = subprocess.run(
            ["bash", str(ROOT / ".ci" / "image-base")], capture_output=True, text=True, timeout=1200
        )
        if base.returncode != 0:
            skip_or_fail(f".ci/image-base failed: {base.stdout[-2000:]}{base.stderr[-2000:]}")
    elif not have_tools:
        skip_or_fail("podman and buildah are not installed (as root: .ci/image-base)")
    elif run("podman", "image", "exists", BASE_IMAGE, check=False).returncode != 0:
        skip_or_fail(f"no base image {BASE_IMAGE} (as root: .ci/image-base)")
    started = time.monotonic()
    build = subprocess.run(
        [
            "podman",
            "build",
            "--format",
            "docker",
            "--isolation",
            "chroot",
            "--network",
            "host",
            "--layers",
            "--secret",
            f"id=ca-certificates,src={ca_bundle()}",
            "--build-arg",
            f"PYTHON_IMAGE={BASE_IMAGE}",
            "-f",
            str(ROOT / "deploy" / "Dockerfile"),
            "-t",
            IMAGE,
            str(ROOT),
        ],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
    )
    seconds = time.monotonic() - started
    if build.returncode != 0:
        pytest.fail(f"the image did not build:\n{build.stdout[-6000:]}\n{build.stderr[-4000:]}")
    [inspected] = json.loads(run("podman", "image", "inspect", IMAGE).stdout)
    return Built(
        IMAGE, seconds, int(inspected["Size"]), inspected["Config"], inspected.get("Healthcheck") or {}
    )


# -- running roles inside it ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Box:
    """One role's working container, and the processes started in it."""

    name: str
    log: Path
    procs: list[subprocess.Popen[bytes]]

    def upper_dir(self) -> Path:
        """The container's writable layer (overlay storage): every file it wrote."""
        merged = Path(run("buildah", "mount", self.name).stdout.strip())
        assert merged.name == "merged", merged
        return merged.parent / "diff"


class Boxes:
    def __init__(self, image: str, tmp_path: Path) -> None:
        self.image, self.tmp_path = image, tmp_path
        self.boxes: dict[str, Box] = {}
        self.prefix = f"hearts-test-{uuid.uuid4().hex[:8]}"

    def box(self, role: str) -> Box:
        if role not in self.boxes:
            name = f"{self.prefix}-{role}"
            run("buildah", "from", "--quiet", "--name", name, self.image)
            self.boxes[role] = Box(name, self.tmp_path / f"{role}.log", [])
        return self.boxes[role]

    def argv(self, role: str, command: list[str], env: dict[str, str]) -> list[str]:
        flags = [f"--env={key}={value}" for key, value in env.items()]
        return ["buildah", "run", "--isolation=chroot", *flags, self.box(role).name, "--", *command]

    def call(self, role: str, command: list[str], env: dict[str, str], timeout: float = 120) -> str:
        """Run a command to its end in the role's container; its output."""
        result = run(*self.argv(role, command, env), timeout=timeout, check=False)
        out = result.stdout + result.stderr
        assert result.returncode == 0, f"{role}: {command} exited {result.returncode}:\n{out[-4000:]}"
        return out

    def start(self, role: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start a long-running command in the role's container, in a session of its own."""
        box = self.box(role)
        out = open(box.log, "ab")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            self.argv(role, command, env),
            env=podman_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        box.procs.append(proc)
        return proc

    def stop(self) -> None:
        """SIGTERM to each process group (the servers shut down cleanly), SIGKILL after 20 s."""
        procs = [p for box in self.boxes.values() for p in box.procs if p.poll() is None]
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def remove(self) -> None:
        for box in self.boxes.values():
            run("buildah", "rm", box.name, check=False)


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database next to DATABASE_URL's, dropped at the end."""
    config = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = f"{config['NAME']}_image"
    params = {
        "host": config.get("HOST") or "127.0.0.1",
        "port": config.get("PORT") or 5432,
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
    }

    def admin(sql: str) -> None:
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
            conn.execute(sql)

    admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{name}"')
    user = f"{params['user']}@" if params["user"] else ""
    yield f"postgres://{user}{params['host']}:{params['port']}/{name}"
    admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def boxes(image: Built, tmp_path: Path) -> Iterator[Boxes]:
    started = Boxes(image.image, tmp_path)
    yield started
    started.stop()
    started.remove()


def purge_queues() -> None:
    """Nothing left in the lanes from another run of the suite on this Redis."""
    from hearts_service.celery import app

    with app.connection_for_write() as conn:
        for queue in [jobs.CLOCKS_QUEUE, jobs.PEOPLE_QUEUE, jobs.WEBHOOKS_QUEUE, *jobs.bot_queues()]:
            conn.default_channel.queue_purge(queue)


def wait_for(what: str, check: Callable[[], Any], seconds: float, logs: Callable[[], str]) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds}s\n{logs()[-6000:]}")


# -- the API client ----------------------------------------------------------------------------


class Api:
    """The served API as an app would reach it through a TLS-terminating proxy (X-Forwarded-Proto)."""

    def __init__(self, base: str, token: str | None = None) -> None:
        headers = {"Host": "localhost", "X-Forwarded-Proto": "https"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(base_url=base + "/api/v1", headers=headers, timeout=30)

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
        return self.http.request(method, path, json=body, headers=headers)

    def ok(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        response = self.call(method, path, body, **headers)
        assert response.status_code in (200, 201), (path, response.status_code, response.text)
        return response.json()


def play_as_person(api: Api, table_id: int, seconds: float) -> int:
    """Play the person's seat to the end of the game (pass the first three cards offered, play the
    first legal card, subtract on a moon); returns how many actions the server accepted from it.
    A 409/422 (a clock or another seat got there first) means: read the table again."""
    accepted, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        table = api.ok("GET", f"/tables/{table_id}")
        if table["status"] == "finished":
            return accepted
        legal = (table["game"] or {}).get("legal_actions")
        if not legal:
            time.sleep(0.05)
            continue
        if legal["type"] == "pass":
            body: dict[str, Any] = {"type": "pass", "cards": legal["from"][: legal["count"]]}
        elif legal["type"] == "play":
            body = {"type": "play", "card": legal["cards"][0]}
        else:
            body = {"type": "moon", "choice": "subtract"}
        version = str(table["version"])
        response = api.call(
            "POST",
            f"/tables/{table_id}/actions",
            body,
            **{"If-Match": version, "Idempotency-Key": f"{table_id}-{version}"},
        )
        if response.status_code == 200:
            accepted += 1
        else:
            assert response.status_code in (409, 422), response.text
    raise AssertionError(f"table {table_id} did not finish in {seconds}s")


def metric_total(text: str, name: str) -> float:
    """The sum of a metric's samples (every label set) in a Prometheus text exposition."""
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, flags=re.MULTILINE))


# -- the test ----------------------------------------------------------------------------------


@pytest.mark.needs_postgres
@pytest.mark.needs_redis
def test_the_image_migrates_serves_works_every_lane_and_plays_whole_games(
    image: Built, boxes: Boxes, database: str, redis_url: str, tmp_path: Path
) -> None:
    roles = compose_roles(tmp_path)
    print(f"\nimage build {image.seconds:.1f}s, size {image.size / 1e6:.0f} MB")

    def env(role: str, **extra: str) -> dict[str, str]:
        """The service's environment as compose gives it, but the host's database and Redis."""
        return {**roles[role].environment, "DATABASE_URL": database, "REDIS_URL": redis_url, **extra}

    def logs() -> str:
        return "".join(
            f"== {b.log.name}\n{b.log.read_text()}" for b in boxes.boxes.values() if b.log.exists()
        )

    # What the runtime image holds: its user, the compiled engine and bots, no compiler and no pip.
    assert image.config["User"] == "10001:10001"
    # (the HEALTHCHECK is kept: a docker-format image, as `docker build` makes)
    assert "/healthz" in " ".join(image.healthcheck.get("Test", [])), image.healthcheck
    contents = boxes.call(
        "migrate",
        [
            "sh",
            "-c",
            "id -u; python -c 'import games.engine.state as s, bots.expert as e; "
            "print(s.__file__, e.__file__)'; "
            "for t in gcc cc c++ make pip pip3; do command -v $t || echo no-$t; done; "
            "python -c 'import pip' 2>&1 | tail -1; "
            "ls /opt/venv/lib/python3.11/site-packages/staticfiles/admin/css/base.css",
        ],
        env("migrate"),
    )
    assert contents.splitlines()[0] == "10001"
    assert re.search(r"games/engine/state\.cpython-311-x86_64-linux-gnu\.so", contents), contents
    assert re.search(r"bots/expert\.cpython-311-x86_64-linux-gnu\.so", contents), contents
    for name in ("gcc", "cc", "c++", "make", "pip", "pip3"):
        assert f"no-{name}" in contents, contents
    assert "No module named 'pip'" in contents

    # migrate (compose's service, the Kubernetes Job), then the init containers' check.
    purge_queues()
    out = boxes.call("migrate", roles["migrate"].command or [], env("migrate"), timeout=300)
    assert "Applying games.0001_initial... OK" in out, out
    boxes.call("migrate", ["timeout", "60", *init_command()], env("migrate"))

    # web: the image's default command; start-up = until /healthz answers.
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    assert roles["web"].command is None
    started = time.monotonic()
    web = boxes.start(
        "web", [*(image.config.get("Entrypoint") or []), *image.config["Cmd"]], env("web", PORT=str(port))
    )

    def healthz() -> bool:
        assert web.poll() is None, logs()
        try:
            return httpx.get(base + "/healthz", headers={"Host": "localhost"}, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    wait_for("the web answers /healthz", healthz, 60, logs)
    web_startup = time.monotonic() - started
    print(f"web start-up (until /healthz answers): {web_startup:.2f}s")

    # a worker per lane and beat, exactly compose's commands; each worker's metrics on a port of its own.
    metrics_ports = {name: free_port() for name in WORKERS}
    for name in WORKERS:
        boxes.start(name, roles[name].command or [], env(name, CELERY_METRICS_PORT=str(metrics_ports[name])))
    boxes.start("beat", roles["beat"].command or [], env("beat"))
    for name in WORKERS:
        box = boxes.box(name)
        wait_for(f"{name} is ready", lambda box=box: " ready." in box.log.read_text(), 90, logs)  # type: ignore[misc]
    from hearts_service.celery import app

    def listening() -> dict[str, list[str]] | None:
        """Each lane's worker and the queues it consumes, once every lane answers."""
        replies = app.control.inspect(timeout=3).active_queues() or {}
        lanes = {node.split("@")[0]: sorted(q["name"] for q in qs) for node, qs in replies.items()}
        return lanes if set(lanes) >= set(jobs.LANES) else None

    by_lane = wait_for("every lane's worker lists its queues", listening, 60, logs)
    assert by_lane == {
        "clocks": ["clocks"],
        "people": ["people"],
        "bots": sorted(jobs.bot_queues()),
        "webhooks": ["webhooks"],
        "push": ["push"],
        "bulk": ["bulk"],
        "hints": ["hints"],
    }, by_lane
    wait_for("beat is up", lambda: "beat: Starting" in boxes.box("beat").log.read_text(), 60, logs)
    # The health checks, run inside the container they check: each worker's (compose's, and the
    # Kubernetes liveness probe), and the image's HEALTHCHECK in the web's.
    for name in WORKERS:
        pong = boxes.call(name, roles[name].healthcheck or [], env(name), timeout=60)
        assert "pong" in pong, pong
    boxes.call("web", image.healthcheck["Test"][1:], env("web", PORT=str(port)), timeout=30)

    # probes
    probe = httpx.get(base + "/readyz", headers={"Host": "localhost"}, timeout=5)
    assert probe.status_code == 200, probe.text
    assert probe.json() == {"status": "ready", "checks": {"database": "ok", "redis": "ok"}}
    assert httpx.get(base + "/healthz", headers={"Host": "localhost"}).json() == {"status": "ok"}

    # a whole bot-only game (the bots lane) and a person's game with a turn clock (people, clocks)
    token = Api(base).ok("POST", "/guests", {"name": "Ada"})["token"]
    api = Api(base, token)
    bots_only = api.ok(
        "POST", "/tables", {"options": {"target_score": 50}, "bots": dict.fromkeys("0123", "basic")}
    )["id"]
    person = api.ok(
        "POST",
        "/tables",
        {
            "options": {"target_score": 50},
            "bots": dict.fromkeys("123", "basic"),
            "clocks": {"pass": 5, "play": 30, "moon": 30},
            # Unpaced: this game checks the lanes and the clock, and its polling player would
            # otherwise wait out (and read through) a 700 ms pace before every bot card.
            "bot_pace_ms": 0,
        },
    )["id"]
    api.ok("POST", f"/tables/{person}/join", {"position": 0})
    # The person lets the first pass clock run out: the clock lane passes for them.
    wait_for(
        "the clock lane passes for the person",
        lambda: "turn_timed_out" in api.call("GET", f"/tables/{person}/events?after=0").text,
        30,
        logs,
    )
    accepted = play_as_person(api, person, 240)
    assert accepted >= 10, accepted
    finished = wait_for(
        "the bot-only table finishes",
        lambda: (t := api.ok("GET", f"/tables/{bots_only}"))["status"] == "finished" and t,
        240,
        logs,
    )
    for table_id, table in ((bots_only, finished), (person, api.ok("GET", f"/tables/{person}"))):
        assert table["game"]["winners"], table
        assert max(table["game"]["scores"]) >= 50, table
        moves = api.ok("GET", f"/tables/{table_id}/moves?after=0")
        assert moves["moves"][0]["seq"] == 1, moves

    # /metrics of the web (both uvicorn workers added up) and of the workers' exporters
    metrics = httpx.get(base + "/metrics", headers={"Host": "localhost"}, timeout=10)
    assert metrics.status_code == 200, metrics.text
    assert metric_total(metrics.text, "hearts_actions_applied_total") >= accepted
    assert metric_total(metrics.text, "hearts_http_request_duration_seconds_count") > accepted
    for name in ("worker-bots", "worker-people", "worker-clocks"):
        exported = httpx.get(f"http://127.0.0.1:{metrics_ports[name]}/metrics", timeout=10).text
        assert metric_total(exported, "hearts_task_duration_seconds_count") > 0, (name, exported[-2000:])
    assert (
        metric_total(
            httpx.get(f"http://127.0.0.1:{metrics_ports['worker-bots']}/metrics", timeout=10).text,
            "hearts_actions_applied_total",
        )
        > 0
    )

    # static files: the web client as in the repository, and the API docs' pinned assets
    static = httpx.Client(base_url=base, headers={"Host": "localhost", "X-Forwarded-Proto": "https"})
    for name in ("index.html", "app.js", "style.css"):
        served = static.get("/play/" if name == "index.html" else f"/play/{name}")
        assert served.status_code == 200 and served.content == (ROOT / "web" / name).read_bytes(), name
    docs = static.get("/api/docs/")
    assert docs.status_code == 200
    assets = re.findall(r'(?:src|href)="(/static/drf_spectacular_sidecar/[^"]+)"', docs.text)
    assert assets, docs.text[:2000]
    for asset in assets:
        assert static.get(asset).status_code == 200, asset
    assert static.get("/api/schema/").status_code == 200

    # stop everything; the roles wrote nothing outside /tmp (a read-only root filesystem works)
    boxes.stop()
    for role, box in boxes.boxes.items():
        upper = box.upper_dir()
        written = sorted("/" + str(p.relative_to(upper)) for p in upper.rglob("*") if not p.is_dir())
        outside = [p for p in written if not p.startswith("/tmp/")]
        assert outside == [], (role, outside)
        if role == "web":  # the check sees what a role writes: the web's shared metrics files
            assert any(p.startswith("/tmp/prometheus/") for p in written), written
