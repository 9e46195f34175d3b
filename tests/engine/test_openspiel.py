"""Our engine against OpenSpiel's Hearts, step by step: hundreds of reference hands, every decision compared.

OpenSpiel (`open-spiel`, imported as `pyspiel`, in the bench extra) has a C++ Hearts of its own: the
4-player classic game with passing, and with its `jd_bonus` our Omnibus Hearts. Each reference hand
is dealt by our engine, given to OpenSpiel as the same deal and pass direction, and played in both
engines at once, a random legal card at each step. Before every card the two must agree on whose
decision it is and on every card that seat may pass or play (`bench/vs_openspiel.py`, which plays
our bots against OpenSpiel's ISMCTS the same way, holds that comparison); after every trick, on
each seat's points; at the end, on each seat's score, shot moons included (OpenSpiel scores a moon
as our `add`).

`make test-compiled` runs it against the compiled engine in `.venv-bench`, which installs OpenSpiel;
there (HEARTS_EXPECT_OPENSPIEL=1) a missing `pyspiel` fails under CI=true. The main suite's venv has
no OpenSpiel, so it skips there.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from games.engine import ADD, GAME_OVER, MOON, PASSING, MoonChoice, Options, State
from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
HANDS = 1500  # reference hands per variant, every pass direction and the hold hand alike (4 s in all)
MOONS = 5  # shot moons at least among them (random play shoots about one hand in eighty)
SEATS = 4
SPIEL_SEATS = "NESW"  # OpenSpiel's names of players 0 to 3 in its printed state
POINTS = re.compile(r"Points:\n" + r"\n".join(rf"{s}: (-?\d+)" for s in SPIEL_SEATS))


def _comparison() -> ModuleType:
    """bench/vs_openspiel.py, loaded from its file: bench/ is not a package, and `make
    test-compiled` keeps the source tree off the import path (the engine it imports is the build's)."""
    name = "bench_vs_openspiel"
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "vs_openspiel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


vs = _comparison()


@pytest.fixture(scope="module")
def pyspiel() -> Any:
    if vs.pyspiel is None:
        if os.environ.get("HEARTS_EXPECT_OPENSPIEL") == "1":
            skip_or_fail("pyspiel is not installed (open-spiel, in the bench extra)")
        pytest.skip("no OpenSpiel in this venv (the bench extra): make test-compiled runs this comparison")
    return vs.pyspiel


def spiel_points(spiel: Any) -> list[int]:
    """Each seat's points in OpenSpiel's state so far (its printed state is the only place it shows them)."""
    match = POINTS.search(str(spiel))
    assert match, str(spiel)
    return [int(p) for p in match.groups()]


def play_reference_hand(game: Any, state: State, rng: random.Random) -> bool:
    """Play the hand of `state` in both engines, a random legal card at every step (a pass is three
    such cards), comparing them all the way; whether the moon was shot."""
    spiel = vs.spiel_deal(game, vs.pass_offset(state.options, state.hand_no), list(state.hands))
    chosen: list[list[int]] = [[] for _ in range(SEATS)]
    plays = 0
    while not spiel.is_terminal():
        seat = vs.agreed_seat(spiel, state, chosen)
        cards = sorted(vs.FROM_SPIEL[a] for a in spiel.legal_actions())
        passing = state.phase == PASSING
        vs.apply_card(spiel, state, seat, rng.choice(cards), chosen)
        plays += not passing
        if plays % SEATS == 0 and not passing and not spiel.is_terminal():
            assert spiel_points(spiel) == state.hand_points(), f"points differ after trick {plays // SEATS}"
    moon = state.phase == MOON
    if moon:
        state.push(state.shooter, MoonChoice(ADD))
    assert state.phase == GAME_OVER, state.phase
    returns = [round(r) for r in spiel.returns()]
    assert returns == [vs.HAND_POINTS - p for p in state.sheet[-1]["points"]], (returns, state.sheet[-1])
    return moon


@pytest.mark.parametrize(
    ("variant", "parameters"), [("classic", {}), ("omnibus", {"jd_bonus": True})], ids=["classic", "omnibus"]
)
def test_every_decision_of_reference_hands_agrees_with_openspiel(
    pyspiel: Any, variant: str, parameters: dict[str, bool]
) -> None:
    game = pyspiel.load_game("hearts", parameters)
    options = Options.build(players=SEATS, variant=variant)
    rng = random.Random(f"openspiel-reference-{variant}")
    moons = 0
    for k in range(HANDS):
        state = vs.dealt_hand(options, f"openspiel-reference-{variant}-{k}", 1 + k % SEATS)
        moons += play_reference_hand(game, state, rng)
    assert moons >= MOONS, f"{moons} shot moons in {HANDS} hands: too few to compare the moon's scoring"
