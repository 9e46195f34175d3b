"""Which build is under test (source or mypyc-compiled), and that compiled bots decide as the source.

The engine and the bots' search are compiled together (setup.py); `make test-compiled` runs these
tests against that build, the main suite against the source."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bots.expert
import games.engine.state

ROOT = Path(__file__).resolve().parents[2]


def test_engine_build_is_the_one_under_test() -> None:
    for module in (games.engine.state, bots.expert):
        compiled = not str(module.__file__).endswith(".py")
        assert compiled == (os.environ.get("HEARTS_EXPECT_COMPILED") == "1"), module.__file__


def _tournament(tmp_path: Path, args: list[str], *, source: bool) -> dict[str, object]:
    """A small seeded tournament in a new process: with the source tree first on the path, or with
    the installed build (compiled in `make test-compiled`)."""
    env = {**os.environ, "HEARTS_EXPERT_ITERATIONS": "30"}
    env.pop("PYTHONPATH", None)
    if source:
        env["PYTHONPATH"] = str(ROOT)
    out = tmp_path / f"{'source' if source else 'installed'}.json"
    command = [sys.executable, "-m", "bots.tournament", *args, "--quiet", "--json", str(out)]
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    result: dict[str, object] = json.loads(out.read_text())
    return result


@pytest.mark.parametrize(
    ("reference", "table"),
    [
        ("strong", ["--players", "4", "--deal-sets", "1"]),
        ("basic", ["--players", "5", "--variant", "omnibus", "--deal-sets", "1"]),
        ("strong", ["--players", "3", "--deal-sets", "1"]),
        ("basic", ["--players", "6", "--variant", "cancellation", "--deal-sets", "1"]),  # 104-bit masks
    ],
)
def test_the_installed_bots_decide_as_the_source_does(
    tmp_path: Path, reference: str, table: list[str]
) -> None:
    args = ["--candidate", "expert", "--reference", reference, "--seed", "5", *table]
    installed = _tournament(tmp_path, args, source=False)
    source = _tournament(tmp_path, args, source=True)
    assert installed["hands"] and installed["hands"] == source["hands"]
    for figure in ("per_deal_gaps", "candidate_points_per_hand", "reference_points_per_hand"):
        assert installed[figure] == source[figure], figure
