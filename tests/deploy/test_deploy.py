"""The deploy artefacts (deploy/) checked by real validators and for the promises they make: Kubernetes
manifests against the Kubernetes JSON schemas (kubernetes-validate), the compose file by Debian's
docker-compose and against the compose-spec schema (check-jsonschema), the Dockerfile read by Docker's
own parser (the dockerfile package), the proxy's configuration by Debian's `nginx -t`, production
settings by Django's `check --deploy`, and the Dockerfile, compose file and manifests for non-root,
probes, one beat, migrations as their own step, uvicorn with several workers, and several web
replicas behind a proxy that passes WebSockets and SSE with no stickiness (tests/e2e/test_proxy.py
runs that proxy). Under CI=true a missing tool fails."""

from __future__ import annotations

import itertools
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from games.infra import jobs
from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
NGINX_CONF = DEPLOY / "nginx.conf"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
# The oldest Kubernetes still commonly run, and the newest the validator knows.
K8S_VERSIONS = ["1.29.0", None]


def tool(name: str) -> str:
    """A validator's executable: next to this Python (the venv's console scripts) or on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        skip_or_fail(f"{name} is not installed (pip install '.[test]'; .ci/run installs system tools)")
    return str(found)


def nginx_binary() -> str:
    """Debian's nginx (`nginx-light` or `nginx`, which .ci/run installs); /usr/sbin may be off PATH."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        skip_or_fail("nginx is not installed (apt-get install nginx-light; .ci/run installs it)")
    return str(found)


def nginx_config(prefix: Path, *, listen: str, servers: list[str], advice: list[str] | None = None) -> Path:
    """deploy/nginx.conf with the same directives, made runnable outside compose: each upstream line
    `server web:8000 ...` becomes one line per address in `servers`, and `server advice:8000 ...`
    one per address in `advice` (by default `servers`), with the same parameters but `resolve`
    (which only names re-resolve and Debian's nginx 1.22 lacks); `listen 8080` becomes `listen`,
    and every path under /tmp moves under `prefix` (written there as nginx.conf)."""
    text = NGINX_CONF.read_text()
    addresses = {"web": servers, "advice": servers if advice is None else advice}

    def one_per_address(line: re.Match[str]) -> str:
        indent, name, params = line.groups()
        kept = " ".join(p for p in params.split() if p != "resolve")
        return "\n".join(
            f"{indent}server {address} {kept};".replace(" ;", ";") for address in addresses[name]
        )

    text, upstreams = re.subn(
        r"^( *)server (web|advice):8000 ([^;]*);$", one_per_address, text, flags=re.MULTILINE
    )
    assert upstreams == 3  # web's, advice's and web's again as advice's backup
    text, listens = re.subn(r"^( *)listen 8080;$", rf"\1listen {listen};", text, flags=re.MULTILINE)
    assert listens == 1
    text = text.replace("/tmp/", f"{prefix}/")
    path = prefix / "nginx.conf"
    path.write_text(text)
    return path


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def k8s_documents() -> list[dict[str, Any]]:
    docs = []
    for path in MANIFESTS:
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def k8s(kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in k8s_documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"]
    return list(spec.get("initContainers", [])) + list(spec["containers"])


def command_text(container_or_service: dict[str, Any]) -> str:
    command = container_or_service.get("command", [])
    return " ".join(command) if isinstance(command, list) else str(command)


# -- Kubernetes manifests: real schema validation ---------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS, ids=lambda v: v or "latest")
def test_k8s_manifests_pass_kubernetes_validate_strict(version: str | None) -> None:
    validator = tool("kubernetes-validate")
    args = [validator, "--strict"] + (["--kubernetes-version", version] if version else [])
    result = run(*args, *map(str, MANIFESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    passed = result.stdout + result.stderr
    for doc in k8s_documents():
        assert f"{doc['kind'].lower()}/{doc['metadata']['name']} against" in passed, passed


def test_kubernetes_validate_rejects_a_broken_manifest(tmp_path: Path) -> None:
    """The validator is real: a typo'd field and a wrongly typed value are both refused."""
    validator = tool("kubernetes-validate")
    text = (K8S / "web-deployment.yaml").read_text()
    typo = tmp_path / "typo.yaml"
    typo.write_text(text.replace("readinessProbe:", "readynessProbe:", 1))
    wrong_type = tmp_path / "wrong-type.yaml"
    wrong_type.write_text(re.sub(r"replicas: \d+", "replicas: two", text, count=1))
    assert wrong_type.read_text() != text
    for broken in (typo, wrong_type):
        result = run(validator, "--strict", str(broken))
        assert result.returncode != 0, (broken.name, result.stdout)


def test_kustomization_lists_every_manifest_and_no_namespace() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in MANIFESTS)
    assert "namespace" not in kustomization
    for doc in k8s_documents():
        assert "namespace" not in doc["metadata"], doc["metadata"]["name"]


# -- compose: Debian's docker-compose and the compose-spec schema ------------------------------


def compose_copy(tmp_path: Path, **overrides: str) -> Path:
    """deploy/ copied with a .env made from .env.example (required values filled in or overridden)."""
    (tmp_path / "deploy").mkdir()
    shutil.copy(COMPOSE, tmp_path / "deploy" / "compose.yaml")
    shutil.copy(NGINX_CONF, tmp_path / "deploy" / "nginx.conf")
    values = {"SECRET_KEY": secrets.token_urlsafe(64), "POSTGRES_PASSWORD": "pw-" + secrets.token_hex(8)}
    values.update(overrides)
    lines = []
    for line in (DEPLOY / ".env.example").read_text().splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={values[key]}" if "=" in line and key in values else line)
    (tmp_path / "deploy" / ".env").write_text("\n".join(lines) + "\n")
    return tmp_path / "deploy" / "compose.yaml"


def test_compose_file_passes_docker_compose_config(tmp_path: Path) -> None:
    compose = tool("docker-compose")
    path = compose_copy(tmp_path)
    result = run(compose, "-f", str(path), "config", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    resolved = yaml.safe_load(run(compose, "-f", str(path), "config").stdout)
    web_env = resolved["services"]["web"]["environment"]
    assert web_env["DATABASE_URL"].startswith("postgres://hearts:pw-")
    assert web_env["DATABASE_URL"].endswith("@postgres:5432/hearts")
    assert web_env["REDIS_URL"] == "redis://redis:6379/0"
    assert web_env["DEBUG"] == "false"
    assert web_env["HEARTS_ENV"] == "production"
    assert resolved["services"]["web"]["deploy"]["replicas"] >= 3
    [mount] = resolved["services"]["proxy"]["volumes"]
    source = mount["source"] if isinstance(mount, dict) else mount.split(":")[0]
    assert Path(source) == tmp_path / "deploy" / "nginx.conf"  # relative to the compose file


def test_compose_refuses_to_start_without_the_database_password(tmp_path: Path) -> None:
    compose = tool("docker-compose")
    path = compose_copy(tmp_path, POSTGRES_PASSWORD="")
    result = run(compose, "-f", str(path), "config", "-q")
    assert result.returncode != 0
    assert "POSTGRES_PASSWORD" in result.stdout + result.stderr


def test_compose_file_matches_the_compose_spec_schema() -> None:
    checker = tool("check-jsonschema")
    result = run(checker, "--builtin-schema", "vendor.compose-spec", str(COMPOSE))
    assert result.returncode == 0, result.stdout + result.stderr


# -- structural promises -----------------------------------------------------------------------


def dockerfile_stages() -> list[list[Any]]:
    """The Dockerfile as parsed by Docker's own (Go, BuildKit) parser, split into stages at each FROM."""
    try:
        import dockerfile
    except ImportError:
        skip_or_fail("the dockerfile package (Docker's parser) is not installed (pip install '.[test]')")
    stages: list[list[Any]] = []
    for instruction in dockerfile.parse_file(str(DOCKERFILE)):
        if instruction.cmd == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def test_dockerfile_parser_is_real(tmp_path: Path) -> None:
    """Docker's parser is really parsing: it refuses a malformed instruction (an ENV with no value)."""
    dockerfile_stages()
    import dockerfile

    broken = tmp_path / "Dockerfile"
    broken.write_text("FROM python:3.11-slim\nENV ONLY_A_NAME\n")
    with pytest.raises(dockerfile.GoParseError):
        dockerfile.parse_file(str(broken))


def test_dockerfile_is_multi_stage_non_root_and_never_migrates_at_start() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    build = " ".join(" ".join(i.value) for i in stages[0])
    runtime = stages[-1]
    runtime_text = " ".join(" ".join(i.flags + i.value) for i in runtime)
    assert "HEARTS_COMPILE=1" in build and "gcc" in build
    assert "gcc" not in runtime_text and "[test]" not in runtime_text and "[bench]" not in runtime_text
    assert [i.value for i in runtime if i.cmd == "COPY" and "--from=build" in i.flags] == [
        ("/opt/venv", "/opt/venv")
    ]
    users = [i.value[0] for i in runtime if i.cmd == "USER"]
    assert users, "the runtime stage sets no USER"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert any(i.cmd == "RUN" and "collectstatic" in i.value[0] for i in runtime)
    [healthcheck] = [i for i in runtime if i.cmd == "HEALTHCHECK"]
    assert "/healthz" in " ".join(healthcheck.value)
    [cmd] = [i for i in runtime if i.cmd == "CMD"]
    assert cmd.json, "CMD in exec form, so the server gets the stop signal"
    command = " ".join(cmd.value)
    assert "exec uvicorn hearts_service.asgi:application" in command
    assert "--workers" in command and "WEB_CONCURRENCY:-2" in command
    assert "--lifespan off" in command and "--proxy-headers" in command
    # The WebSocket flags the tests' servers run with, in the image and in make run alike.
    from tests.live import WS_FLAGS

    assert " ".join(WS_FLAGS) in command
    assert " ".join(WS_FLAGS) in (ROOT / "Makefile").read_text()
    assert "migrate" not in command and not any(i.cmd == "ENTRYPOINT" for i in runtime)


def test_dockerignore_lets_in_exactly_what_the_dockerfile_copies() -> None:
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    assert rules[0] == "*"  # an allow-list: .venv, .git, db.sqlite3, build/ never reach the context
    allowed = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    copied = set()
    for instruction in itertools.chain.from_iterable(dockerfile_stages()):
        if instruction.cmd == "COPY" and not any(f.startswith("--from=") for f in instruction.flags):
            copied.update(part.rstrip("/") for part in instruction.value[:-1])
    assert copied, "no COPY from the build context"
    assert copied <= allowed, copied - allowed
    for package in ("hearts_service", "games", "bots"):  # pyproject's packages
        assert package in copied


def compose_services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def test_compose_services_migrate_once_then_run_web_worker_and_one_beat() -> None:
    services = compose_services()
    lanes = [f"worker-{lane}" for lane in jobs.LANES]
    assert set(services) == {"postgres", "redis", "migrate", "web", "advice", "proxy", *lanes, "beat"}
    assert "pg_isready" in str(services["postgres"]["healthcheck"]["test"])
    assert any("/var/lib/postgresql/data" in volume for volume in services["postgres"]["volumes"])
    assert "ping" in str(services["redis"]["healthcheck"]["test"])
    assert command_text(services["migrate"]) == "python manage.py migrate --noinput"
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "advice", *lanes, "beat"):
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
        assert "migrate" not in command_text(service)
        assert service["restart"] == "unless-stopped"
    assert (
        "command" not in services["web"]
    )  # the image's own: uvicorn with workers (tests/deploy/test_image.py)
    assert services["web"]["expose"] == ["8000"] and "/healthz" in str(services["web"]["healthcheck"])
    assert "ports" not in services["web"]  # several replicas: only the proxy publishes a port
    for lane in jobs.LANES:  # one worker service per lane, each taking only its own queue
        worker = services[f"worker-{lane}"]
        assert 'worker -Q "$$WORKER_QUEUES"' in command_text(worker)
        assert worker["environment"]["WORKER_QUEUES"] == lane
    assert services["worker-clocks"]["environment"]["WORKER_CONCURRENCY"] == "1"
    assert services["worker-bots"]["cpu_shares"] < 1024  # the people lanes and the web go first
    assert services["worker-hints"]["cpu_shares"] < services["worker-bots"]["cpu_shares"]  # and the bots
    assert services["worker-clocks"]["cpu_shares"] > 1024  # deadlines before everything else
    assert "beat" in command_text(services["beat"])
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1
    assert "scale" not in services["beat"]
    for name in ("migrate", "web", *lanes, "beat"):
        assert services[name]["env_file"] == ".env"


def test_env_example_documents_what_compose_needs() -> None:
    example = (DEPLOY / ".env.example").read_text()
    keys = {
        line.split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("#")
    }
    for key in re.findall(r"\$\{([A-Z_]+)", COMPOSE.read_text()):
        if key != "HEARTS_IMAGE":  # the image tag to run, only for those who push their own
            assert key in keys, key
    assert {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "HEARTS_ENV"} <= keys
    # The container health checks send Host: localhost, so it must stay an allowed host.
    [hosts] = [line.split("=", 1)[1] for line in example.splitlines() if line.startswith("ALLOWED_HOSTS=")]
    assert "localhost" in hosts.split(",")
    assert "'Host': 'localhost'" in str(compose_services()["web"]["healthcheck"]["test"])


def test_k8s_web_probes_security_and_resources() -> None:
    web = k8s("Deployment", "hearts-web")
    [container] = web["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "command" not in container and "args" not in container  # the image's own, as in compose
    # The probes' Host header must be an allowed host, or Django answers them 400.
    allowed = k8s("ConfigMap", "hearts-config")["data"]["ALLOWED_HOSTS"].split(",")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        headers = {h["name"]: h["value"] for h in container[probe]["httpGet"]["httpHeaders"]}
        assert headers["Host"] in allowed
    service = k8s("Service", "hearts-web")
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["targetPort"] in [p["name"] for p in container["ports"]]


def test_k8s_every_pod_runs_as_non_root_with_read_only_root_and_limits() -> None:
    workloads = [d for d in k8s_documents() if d["kind"] in ("Deployment", "Job")]
    assert {d["metadata"]["name"] for d in workloads} == {
        "hearts-web",
        "hearts-advice",
        *(f"hearts-worker-{lane}" for lane in jobs.LANES),
        "hearts-beat",
        "hearts-migrate",
    }
    for doc in workloads:
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        for container in pod_containers(doc):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert (
                "cpu" in container["resources"]["requests"] and "memory" in container["resources"]["limits"]
            )
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            refs = [next(iter(source.values()))["name"] for source in container["envFrom"]]
            assert refs == ["hearts-config", "hearts-secrets"]


def test_k8s_migrations_run_only_in_the_job_and_the_others_wait_for_them() -> None:
    job = k8s("Job", "hearts-migrate")
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "manage.py", "migrate", "--noinput"]
    for name in (
        "hearts-web",
        "hearts-advice",
        *(f"hearts-worker-{lane}" for lane in jobs.LANES),
        "hearts-beat",
    ):
        doc = k8s("Deployment", name)
        [init] = doc["spec"]["template"]["spec"]["initContainers"]
        assert "migrate --check" in command_text(init)  # waits; never applies
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert "migrate" not in command_text(container)


def test_k8s_exactly_one_beat_and_autoscaled_web_and_workers() -> None:
    beat = k8s("Deployment", "hearts-beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert "beat" in command_text(beat["spec"]["template"]["spec"]["containers"][0])
    for lane in jobs.LANES:
        worker = k8s("Deployment", f"hearts-worker-{lane}")
        [container] = worker["spec"]["template"]["spec"]["containers"]
        assert 'worker -Q "$WORKER_QUEUES" ' in command_text(container)
        assert {"name": "WORKER_QUEUES", "value": lane} in container["env"]
    scalers = {
        d["spec"]["scaleTargetRef"]["name"]: d
        for d in k8s_documents()
        if d["kind"] == "HorizontalPodAutoscaler"
    }
    assert set(scalers) == {"hearts-web", "hearts-worker-people", "hearts-worker-bots"}
    for scaler in scalers.values():
        assert scaler["apiVersion"] == "autoscaling/v2"
        assert scaler["spec"]["scaleTargetRef"]["kind"] == "Deployment"
        assert scaler["spec"]["minReplicas"] >= 2
    assert not any(
        d["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget") and "beat" in d["metadata"]["name"]
        for d in k8s_documents()
    )


def test_k8s_secret_holds_only_placeholders() -> None:
    secret = k8s("Secret", "hearts-secrets")
    assert "data" not in secret
    for key, value in secret["stringData"].items():
        assert value == "" or "CHANGE-ME" in value or value == "redis://redis:6379/0", key


# -- the proxy: several web replicas, no stickiness, WebSockets and SSE passed ---------------------


def test_nginx_config_passes_nginx_t(tmp_path: Path) -> None:
    """Debian's nginx parses deploy/nginx.conf (its upstream pointed at addresses, since `web` is
    compose's name): every directive exists and is in its place."""
    nginx = nginx_binary()
    servers = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
    conf = nginx_config(tmp_path, listen="127.0.0.1:18080", servers=servers)
    result = run(nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", "stderr")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test is successful" in result.stderr


def test_nginx_t_is_real(tmp_path: Path) -> None:
    """nginx -t refuses a misspelt directive: the check above is not passing vacuously."""
    nginx = nginx_binary()
    conf = nginx_config(tmp_path, listen="127.0.0.1:18080", servers=["127.0.0.1:1"])
    conf.write_text(conf.read_text().replace("proxy_buffering off;", "proxy_bufering off;"))
    result = run(nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", "stderr")
    assert result.returncode != 0 and "proxy_bufering" in result.stderr


def nginx_directives(text: str) -> list[str]:
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def seconds(value: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return int(value[:-1]) * units[value[-1]] if value[-1] in units else int(value)


def test_nginx_config_balances_every_replica_and_passes_websockets_and_streams() -> None:
    directives = nginx_directives(NGINX_CONF.read_text())
    # Round-robin: no directive that pins a client to one replica.
    for pinning in ("ip_hash", "hash ", "sticky", "least_conn", "random"):
        assert not any(d.startswith(pinning) for d in directives), pinning
    servers = [d for d in directives if d.startswith("server ") and ":8000 " in d]
    assert servers == [
        "server web:8000 resolve max_fails=1 fail_timeout=5s;",  # every replica, re-resolved
        "server advice:8000 resolve max_fails=1 fail_timeout=5s;",  # every advice replica
        "server web:8000 resolve backup;",  # ... and the web's while none answers
    ]
    assert "resolver 127.0.0.11 valid=10s ipv6=off;" in directives  # Docker's DNS
    assert "zone hearts_web 64k;" in directives  # one rotation for all nginx workers
    assert "zone hearts_advice 64k;" in directives
    # The hint and review requests to the advice replicas (docs/hints.md), the rest to the web's.
    text = NGINX_CONF.read_text()
    advised = re.search(r"location ~ (\S+) \{\s*proxy_pass http://hearts_advice;\s*\}", text)
    assert advised is not None
    for path in ("/api/v1/tables/12/hint", "/api/v1/tables/12/hands/3/review", "/api/v1/tables/1/hint/"):
        assert re.match(advised[1], path), path
    for path in ("/api/v1/tables/12/actions", "/api/v1/tables/12", "/api/v1/tables/12/hints/x", "/graphql/"):
        assert not re.match(advised[1], path), path
    assert re.search(r"location / \{\s*proxy_pass http://hearts_web;\s*\}", text)
    assert "listen 8080;" in directives
    for needed in (
        "proxy_http_version 1.1;",
        "proxy_set_header Upgrade $http_upgrade;",
        "proxy_set_header Connection $connection_upgrade;",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "proxy_set_header X-Forwarded-Proto $forwarded_proto;",
        "proxy_set_header Host $http_host;",
        "proxy_buffering off;",
        "proxy_next_upstream error timeout;",
    ):
        assert needed in directives, needed
    # Longer than any quiet spell of a live stream (keep-alives every 15 s) or socket (pings every 10 s).
    for name in ("proxy_read_timeout", "proxy_send_timeout"):
        [value] = [d.split()[1].rstrip(";") for d in directives if d.startswith(name + " ")]
        assert seconds(value) >= 3600, name
    # Every path it writes is under /tmp (compose runs it read-only, non-root, with a tmpfs there).
    for d in directives:
        if d.startswith(("pid ", "client_body_temp_path", "proxy_temp_path", "fastcgi_temp_path")):
            assert d.split()[1].startswith("/tmp/"), d


def test_compose_runs_several_web_replicas_behind_the_proxy() -> None:
    services = compose_services()
    web, proxy = services["web"], services["proxy"]
    assert web["deploy"]["replicas"] >= 3
    assert proxy["image"].startswith("nginx:")  # the official image
    assert proxy["volumes"] == ["./nginx.conf:/etc/nginx/nginx.conf:ro"]
    assert proxy["ports"] == ["${WEB_PORT:-8000}:8080"]  # nginx.conf's `listen 8080`
    assert proxy["depends_on"]["web"]["condition"] == "service_healthy"
    assert proxy["read_only"] is True and proxy["cap_drop"] == ["ALL"] and proxy["tmpfs"] == ["/tmp"]
    assert proxy["user"].split(":")[0] not in ("0", "root")
    assert "deploy" not in proxy or proxy["deploy"].get("replicas", 1) == 1
    # The advice replicas (hints, reviews: nginx.conf's hearts_advice): the same web, on spare CPU.
    advice = services["advice"]
    assert "command" not in advice and advice["expose"] == ["8000"] and advice["env_file"] == ".env"
    assert advice["healthcheck"] == web["healthcheck"] and "ports" not in advice
    assert advice["cpu_shares"] <= services["worker-hints"]["cpu_shares"] < 1024


def test_k8s_runs_several_web_pods_behind_an_ingress_without_affinity() -> None:
    web = k8s("Deployment", "hearts-web")
    assert web["spec"]["replicas"] >= 3
    [scaler] = [
        d
        for d in k8s_documents()
        if d["kind"] == "HorizontalPodAutoscaler" and d["spec"]["scaleTargetRef"]["name"] == "hearts-web"
    ]
    assert scaler["spec"]["minReplicas"] >= web["spec"]["replicas"]
    service = k8s("Service", "hearts-web")
    assert service["spec"].get("sessionAffinity", "None") == "None"
    ingress = k8s("Ingress", "hearts-web")
    annotations = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    for pinning in ("affinity", "affinity-mode", "session-cookie-name", "upstream-hash-by"):
        assert prefix + pinning not in annotations, pinning
    assert annotations[prefix + "load-balance"] == "round_robin"
    assert annotations[prefix + "proxy-buffering"] == "off"  # event streams
    assert annotations[prefix + "proxy-http-version"] == "1.1"
    for name in ("proxy-read-timeout", "proxy-send-timeout"):  # long-lived streams and sockets
        assert int(annotations[prefix + name]) >= 3600
    [rule] = ingress["spec"]["rules"]
    [path] = rule["http"]["paths"]
    assert path["path"] == "/"
    assert path["backend"]["service"] == {"name": "hearts-web", "port": {"name": "http"}}
    assert rule["host"] in k8s("ConfigMap", "hearts-config")["data"]["ALLOWED_HOSTS"].split(",")
    assert [rule["host"]] == ingress["spec"]["tls"][0]["hosts"]


def test_k8s_sends_hints_and_reviews_to_the_advice_pods_and_to_the_web_pods_without_them() -> None:
    """The Ingress `hearts-advice` takes exactly nginx.conf's advice paths (a hint, a review) to
    the advice pods, on the same host and settings as `hearts-web`, and to the web pods while no
    advice pod is ready; the advice pods are the web's container on the least CPU request."""
    web, advice = k8s("Ingress", "hearts-web"), k8s("Ingress", "hearts-advice")
    prefix = "nginx.ingress.kubernetes.io/"
    annotations = advice["metadata"]["annotations"]
    assert annotations[prefix + "use-regex"] == "true"
    assert annotations[prefix + "default-backend"] == "hearts-web"
    assert web["metadata"]["annotations"].items() <= annotations.items()
    assert advice["spec"]["tls"] == web["spec"]["tls"]
    [rule] = advice["spec"]["rules"]
    assert rule["host"] == web["spec"]["rules"][0]["host"]
    [path] = rule["http"]["paths"]
    assert path["pathType"] == "ImplementationSpecific"
    assert path["backend"]["service"] == {"name": "hearts-advice", "port": {"name": "http"}}
    [nginx_path] = re.findall(r"location ~ (\S+) \{", NGINX_CONF.read_text())
    assert path["path"] == nginx_path.lstrip("^")
    pods = {
        name: k8s("Deployment", name)["spec"]["template"]["spec"] for name in ("hearts-web", "hearts-advice")
    }
    [web_container], [advice_container] = (
        pods["hearts-web"]["containers"],
        pods["hearts-advice"]["containers"],
    )
    assert {k: v for k, v in advice_container.items() if k not in ("name", "resources")} == {
        k: v for k, v in web_container.items() if k not in ("name", "resources")
    }
    cpu = advice_container["resources"]["requests"]["cpu"]
    assert cpu.endswith("m") and int(cpu[:-1]) < 50  # below every other pod's request
    service = k8s("Service", "hearts-advice")
    assert (
        service["spec"]["selector"].items()
        <= k8s("Deployment", "hearts-advice")["spec"]["template"]["metadata"]["labels"].items()
    )


# -- production settings -----------------------------------------------------------------------


def production_env(**overrides: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SECURE_", "SESSION_", "CSRF_")) and key not in ("DEBUG", "SECRET_KEY")
    }
    env.update(
        HEARTS_ENV="production",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="example.com",
        DATABASE_URL="postgres://hearts:pw@127.0.0.1:5432/hearts",
    )
    env.update(overrides)
    return env


def test_production_settings_pass_check_deploy_with_no_warnings() -> None:
    result = run(
        sys.executable,
        "manage.py",
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        cwd=ROOT,
        env=production_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_notices_an_operator_turning_security_off() -> None:
    """The env overrides are real, and check --deploy is not passing vacuously."""
    env = production_env(SECURE_SSL_REDIRECT="false", SESSION_COOKIE_SECURE="false")
    result = run(
        sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING", cwd=ROOT, env=env
    )
    assert result.returncode != 0
    assert "security.W008" in result.stderr and "security.W012" in result.stderr


# -- every environment variable is documented ----------------------------------------------------

# Set by Django's own autoreloader for its child process, never by an operator.
NOT_OPERATOR_SETTINGS = {"RUN_MAIN"}
READ_PATTERNS = [
    r"os\.environ\.get\(\s*\"([A-Z][A-Z0-9_]*)\"",
    r"os\.environ\[\s*\"([A-Z][A-Z0-9_]*)\"\s*\]",
    r"os\.getenv\(\s*\"([A-Z][A-Z0-9_]*)\"",
    r"env_(?:bool|int|float|str|list)\(\s*\"([A-Z][A-Z0-9_]*)\"",
]


def variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for package in ("hearts_service", "games", "bots"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            for pattern in READ_PATTERNS:
                names.update(re.findall(pattern, text))
    return names - NOT_OPERATOR_SETTINGS


def test_deploy_docs_document_every_environment_variable() -> None:
    """docs/deploy.md's environment table names every variable the code reads."""
    table = (ROOT / "docs" / "deploy.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", table, flags=re.MULTILINE))
    read = variables_read_by_the_code()
    assert {"DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= read
    assert read <= documented, f"not in docs/deploy.md's environment table: {sorted(read - documented)}"
    # ... and the deploy-only ones the image and manifests read.
    assert {"WEB_CONCURRENCY", "PORT", "FORWARDED_ALLOW_IPS", "WORKER_CONCURRENCY"} <= documented
