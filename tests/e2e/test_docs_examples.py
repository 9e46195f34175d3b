"""Every code example of README.md and docs/*.md, copied as a newcomer would, runs on `make run`'s server.

Each fenced block is classified by its language tag: shell (`sh`, `bash`) runs in bash, `python` with
the venv's Python (the SDK installed), `ts` compiled with clients/typescript's own `tsc` and run by
Node (as `js` is), `graphql` POSTed to /graphql/. A block that is not a program (an output sample,
a fragment, a command that needs Docker or Redis or serves until stopped) says so in the markdown,
in its info string (```json (not a program: why)) or in a comment on the line before its fence
(<!-- not-run: why -->); it is skipped with that reason (`pytest -rs` lists them all), and a block
that is neither runnable nor marked fails. The server is started as `make run` starts it (SQLite in a
temporary directory, no Redis, HEARTS_EMBEDDED_WORKER=1, uvicorn with the deployed flags, the default
bot pace), on a free port that replaces the examples' localhost:8000. Every block must finish within
BLOCK_SECONDS. As a reader following a page would, the shell blocks of a page share one session
(variables, working directory) in order, with `python` and `jq` on the PATH; it runs `set -euo
pipefail` and curl with --fail-with-body, so an undefined placeholder or a refused request fails the
block. Files the examples write land in a scratch directory made of links to the work tree. The
GraphQL operations of a page run in order, each with the bearer token of the last answer that had
one, and variables taken from the answers before it, as README.md says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live import WS_FLAGS, _free_port, _spawn, _stop
from tests.node_modules_cache import node_modules, node_tools

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK_SECONDS = 30  # a newcomer's patience with an example; most finish in a second or two
LANGUAGES = {
    **dict.fromkeys(("sh", "bash", "shell", "console", "curl"), "shell"),
    **dict.fromkeys(("python", "py"), "python"),
    **dict.fromkeys(("ts", "typescript"), "ts"),
    **dict.fromkeys(("js", "javascript", "mjs"), "js"),
    "graphql": "graphql",
}
COPIED = ("clients", "examples")
NOT_COPIED = ("node_modules", "dist", "*.egg-info", "__pycache__")
# A command that installs into the environment the suite runs in (the venv, a package's node_modules):
# never run, even unmarked; the test provides what they install (make's .venv, the locked node_modules).
INSTALLS = re.compile(r"\b(pip install|npm ci|npm install|npm i)\b")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\S*)\s*(.*?)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.+?)\s*-->\s*$")
# What some examples must print besides finishing (the subscription examples of docs/graphql.md).
EXPECTED_OUTPUT = {
    ("docs/graphql.md", "python"): ["TableStateEvent ", "YourTurnEvent ", "{'passCards': {'table': {"],
    ("docs/graphql.md", "js"): ["TableStateEvent", "YourTurnEvent"],
}


@dataclass
class Block:
    page: str  # relative to the repository
    line: int  # of the opening fence
    tag: str
    code: str
    kind: str | None  # shell, python, ts, js, graphql; None when not a program
    not_run: str | None  # the reason the markdown gives, if any

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.tag or 'untagged'}"


def _blocks() -> list[Block]:
    found = []
    for path in PAGES:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            opening = FENCE.match(lines[i])
            if not opening:
                i += 1
                continue
            fence, tag, rest = opening.groups()
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith(fence):
                end += 1
            reason = None
            comment = NOT_RUN.match(lines[i - 1].strip()) if i else None
            if comment:
                reason = comment.group(1)
            elif re.fullmatch(r"\((not a program|not run)\b.*\)", rest):
                reason = rest[1:-1]
            page = str(path.relative_to(ROOT))
            code = "\n".join(lines[i + 1 : end]) + "\n"
            found.append(Block(page, i + 1, tag.lower(), code, LANGUAGES.get(tag.lower()), reason))
            i = end + 1
    return found


BLOCKS = _blocks()


@dataclass
class Server:
    base: str  # http://127.0.0.1:<port>
    tmp: Path
    env: dict[str, str]  # the examples' environment
    sessions: dict[str, Any] = field(default_factory=dict)  # a page's shell or GraphQL state

    def localise(self, code: str) -> str:
        return code.replace("localhost:8000", self.base.removeprefix("http://"))

    def scratch(self, name: str) -> Path:
        """A directory of links to the work tree's top-level entries: the examples' relative paths
        (manage.py, examples/, clients/) work, and the files they write stay out of the tree."""
        path = self.tmp / name
        if not path.exists():
            path.mkdir()
            for entry in ROOT.iterdir():
                if entry.name in COPIED:  # where examples `cd` and build: a copy, not the tree
                    shutil.copytree(entry, path / entry.name, ignore=shutil.ignore_patterns(*NOT_COPIED))
                elif entry.name not in (".git", "node_modules"):
                    (path / entry.name).symlink_to(entry)
        return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server as `make run` starts it (see the Makefile): nothing the suite sets for itself
    (no unpaced bots, no small search budget, no Redis), SQLite in a temporary directory."""
    tmp = tmp_path_factory.mktemp("docs")
    suite_only = ("REDIS_URL", "DATABASE_URL", "CI", "BOT_PACE_MS", "HEARTS_EXPERT_ITERATIONS")
    env = {k: v for k, v in os.environ.items() if k not in suite_only}
    server_env = {**env, "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=server_env, check=True)
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "hearts_service.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--lifespan", "off", *WS_FLAGS]
    log = tmp / "server.log"
    proc = _spawn(command, {**server_env, "HEARTS_EMBEDDED_WORKER": "1"}, log)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise AssertionError(f"the server did not start: {log.read_text()}")
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # an active venv
        yield Server(base, tmp, env)
    finally:
        _stop([proc], graceful=True)


def _finished(done: subprocess.CompletedProcess[str], block: Block, started: float) -> None:
    elapsed = time.monotonic() - started
    assert done.returncode == 0, f"{block.id} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert elapsed < BLOCK_SECONDS, f"{block.id} took {elapsed:.1f} s"
    for expected in EXPECTED_OUTPUT.get((block.page, block.kind or ""), []):
        assert expected in done.stdout, f"{block.id} did not print {expected!r}:\n{done.stdout}"


def _run(block: Block, command: list[str], cwd: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_SECONDS
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(f"{block.id} did not finish within {BLOCK_SECONDS} s; it printed:\n{out}")
    _finished(done, block, started)


# The session around each shell block: strict mode, curl failing on a refused request, the state the
# page's earlier blocks left (variables, working directory) restored before and saved after.
SHELL = """set -euo pipefail
curl() {{ command curl --fail-with-body "$@"; }}
__before=" $(compgen -v | tr '\\n' ' ') __before __v "
if [ -f {state} ]; then source {state}; fi
{code}
{{ for __v in $(compgen -v); do
     case "$__before" in *" $__v "*) ;; *) declare -p "$__v" ;; esac
   done; printf 'cd %q\\n' "$PWD"; }} > {state}.new
mv {state}.new {state}
"""


def _shell(server: Server, block: Block) -> None:
    """Run the page's shell blocks up to this one, in order, in the page's one session."""
    page = server.sessions.setdefault(("shell", block.page), {"done": set()})
    cwd = server.scratch(re.sub(r"\W", "_", block.page))
    state = cwd / ".session"
    for earlier in [b for b in BLOCKS if b.page == block.page and b.kind == "shell" and not b.not_run]:
        if earlier.line > block.line:
            break
        if earlier.line in page["done"]:
            continue
        installs = INSTALLS.search(earlier.code)
        assert not installs, f"{earlier.id} runs `{installs.group()}`: mark it <!-- not-run: installs ... -->"
        script = SHELL.format(state=state, code=server.localise(earlier.code))
        _run(earlier, ["bash", "-c", script], cwd, server.env)
        page["done"].add(earlier.line)


def _python(server: Server, block: Block) -> None:
    cwd = server.scratch("python")
    script = cwd / f"example_{block.page.replace('/', '_')}_{block.line}.py"
    script.write_text(server.localise(block.code))
    _run(block, [sys.executable, str(script)], cwd, server.env)


@pytest.fixture(scope="module")
def node_project(server: Server) -> tuple[str, Path]:
    """node, and a project directory whose node_modules has clients/typescript's locked packages
    (graphql-ws, ws, typescript...) and the SDK itself, built with its tsc, as `hearts-client`."""
    node, npm = node_tools("the TypeScript and JavaScript examples need Node.js 20")
    typescript = ROOT / "clients" / "typescript"
    modules = node_modules(npm, typescript, "hearts-client-ts")
    sdk = server.tmp / "hearts-client"
    shutil.copytree(typescript / "src", sdk / "src")
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(typescript / name, sdk / name)
    (sdk / "node_modules").symlink_to(modules, target_is_directory=True)
    tsc = [node, str(modules / "typescript/bin/tsc"), "-p", "tsconfig.json"]
    built = subprocess.run(tsc, cwd=sdk, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    project = server.tmp / "node-examples"
    (project / "node_modules").mkdir(parents=True)
    for entry in modules.iterdir():
        (project / "node_modules" / entry.name).symlink_to(entry)
    (project / "node_modules" / "hearts-client").symlink_to(sdk, target_is_directory=True)
    (project / "package.json").write_text(json.dumps({"type": "module", "private": True}))
    return node, project


def _node(server: Server, block: Block, node: str, project: Path) -> None:
    name = f"example_{block.page.replace('/', '_').replace('.', '_')}_{block.line}"
    code = server.localise(block.code)
    if block.kind == "js":
        (project / f"{name}.mjs").write_text(code)
        _run(block, [node, f"{name}.mjs"], project, server.env)
        return
    (project / f"{name}.ts").write_text(code)
    tsc = [node, "node_modules/typescript/bin/tsc", "--strict", "--target", "es2022", "--module", "nodenext"]
    tsc += ["--moduleResolution", "nodenext", "--skipLibCheck", "--outDir", "out", f"{name}.ts"]
    compiled = subprocess.run(tsc, cwd=project, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, f"{block.id} does not compile:\n{compiled.stdout}{compiled.stderr}"
    _run(block, [node, f"out/{name}.js"], project, server.env)


def _operations(code: str) -> list[str]:
    """The top-level operations of a GraphQL block (comments dropped), in order."""
    text = re.sub(r"#[^\n]*", "", code)
    operations, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                operations.append(text[start : i + 1].strip())
                start = i + 1
    return operations


def _last(answers: list[Any], key: str) -> Any:
    """The last value of `key` anywhere in the answers so far (depth first, in order)."""
    found = None
    for answer in answers:
        if isinstance(answer, dict):
            for k, v in answer.items():
                found = v if k == key else found
                inner = _last([v], key)
                found = inner if inner is not None else found
        elif isinstance(answer, list):
            inner = _last(answer, key)
            found = inner if inner is not None else found
    return found


def _graphql(server: Server, block: Block) -> None:
    """The page's operations in order: the token of the last answer that had one as the bearer; a
    variable's value from the answers before (`$cards`: the first `count` cards of `from`)."""
    answers = server.sessions.setdefault(("graphql", block.page), [])
    started = time.monotonic()
    for operation in _operations(block.code):
        variables = {}
        for name in re.findall(r"\$(\w+)\s*:", operation):
            if name == "cards":
                legal = _last(answers, "legalActions")
                variables[name] = legal["from"][: legal["count"]]
            else:
                variables[name] = _last(answers, name)
        token = _last(answers, "token")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        body = {"query": operation, "variables": variables}
        answer = httpx.post(f"{server.base}/graphql/", json=body, headers=headers, timeout=BLOCK_SECONDS)
        result = answer.json()
        assert answer.status_code == 200 and not result.get("errors"), f"{block.id}: {operation}\n{result}"
        assert not _last([result["data"]], "errors"), f"{block.id}: {operation}\n{result}"
        answers.append(result["data"])
    elapsed = time.monotonic() - started
    assert elapsed < BLOCK_SECONDS, f"{block.id} took {elapsed:.1f} s"


def test_every_block_is_a_program_or_says_why_not() -> None:
    unmarked = [b.id for b in BLOCKS if b.kind is None and not b.not_run]
    assert not unmarked, (
        "blocks that are not programs must say why they are not run, e.g. ```json (not a program: "
        f"an answer) or <!-- not-run: needs Docker --> on the line before: {unmarked}"
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block: Block, request: pytest.FixtureRequest) -> None:
    if block.not_run:
        pytest.skip(f"not run: {block.not_run}")
    if block.kind is None:
        pytest.fail(f"{block.id}: a block tagged {block.tag!r} is not a program and does not say so")
    server: Server = request.getfixturevalue("server")
    if block.kind == "shell":
        _shell(server, block)
    elif block.kind == "python":
        _python(server, block)
    elif block.kind == "graphql":
        _graphql(server, block)
    else:
        _node(server, block, *request.getfixturevalue("node_project"))
