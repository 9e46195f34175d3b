"""A table's state as JSON in Python: the CPU to write it (in jsonb's key order) and to read it back.

Every action writes the table's state (games.models.stored_json: compact JSON text, keys in
PostgreSQL jsonb's order) and every read of the row, or of a change carried in a wake-up, parses
it. Until stop 54 both used the json module, the key order made by a recursive Python copy of the
state (`jsonb_order`); now orjson writes every array that holds no object as it is and only the
objects are reordered (`games.models.jsonb_text`), and orjson parses. The baseline, the code as it
was, is reproduced here and run in the same process, interleaved with the service's own.

    python bench/state_json.py    # no database: Django's default settings are enough

Sizes: BENCH_ROUNDS rounds (5) of BENCH_PLAYS writes and reads of each kind (2,000), the state
after BENCH_DEALS hands (5: about 4 KB, with the history of the hands played) and after one hand.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

# bench/ itself off the path: its requests.py, engine.py... would shadow the modules of those names
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")

import django  # noqa: E402

django.setup()

from games.engine import Options, State, state_to_dict  # noqa: E402
from games.models import JSONText, stored_json  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
TIMES = int(os.environ.get("BENCH_PLAYS", "2000"))
HANDS = int(os.environ.get("BENCH_DEALS", "5"))


def mid_game_state(hands: int) -> dict[str, Any]:
    """A 4-player game's state after `hands` hands of random legal moves, as the service stores it."""
    state, rng = State.new_game(Options.from_dict({}), "bench-state-json", [], table="1"), random.Random(1)
    while state.hand_no <= hands and not state.is_over:
        seat = state.to_act()[0]
        state, _ = state.apply(seat, rng.choice(list(state.legal_actions(seat))))
    return state_to_dict(state)


def _jsonb_order_before(value: Any) -> Any:
    """games.models.jsonb_order as it was before stop 54: a recursive copy, keys sorted."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: _jsonb_order_before(value[k]) for k in keys}
    if isinstance(value, list):
        return [_jsonb_order_before(v) for v in value]
    return value


def write_before(state: dict[str, Any]) -> str:
    return json.dumps(_jsonb_order_before(state), separators=(",", ":"))


def write_now(state: dict[str, Any]) -> str:
    return stored_json(state, "postgresql")


_FIELD = JSONText()


def read_before(text: str) -> Any:
    return json.loads(text)  # Django's JSONField.from_db_value


def read_now(text: str) -> Any:
    return _FIELD.from_db_value(text, None, None)


def per_call_us(fn: Any, arg: Any) -> float:
    t0 = time.process_time()
    for _ in range(TIMES):
        fn(arg)
    return (time.process_time() - t0) / TIMES * 1e6


def main() -> None:
    for label, hands in (("", HANDS), ("first_hand_", 0)):
        state = mid_game_state(hands)
        text = write_now(state)
        if json.loads(text) != json.loads(write_before(state)) or read_now(text) != state:
            raise SystemExit("the two ways disagree")
        figures: dict[str, list[float]] = {k: [] for k in ("wb", "wn", "rb", "rn")}
        for _ in range(ROUNDS):  # interleaved: the machine's drift touches both alike
            figures["wb"].append(per_call_us(write_before, state))
            figures["wn"].append(per_call_us(write_now, state))
            figures["rb"].append(per_call_us(read_before, text))
            figures["rn"].append(per_call_us(read_now, text))
        best = {k: min(v) for k, v in figures.items()}
        print(f"{label}state_bytes: {len(text.encode())}")
        print(f"{label}write_us_json_module: {best['wb']:.1f}")
        print(f"{label}write_us: {best['wn']:.1f}")
        print(f"{label}write_vs_json_module_ratio: {best['wn'] / best['wb']:.3f}")
        print(f"{label}read_us_json_module: {best['rb']:.1f}")
        print(f"{label}read_us: {best['rn']:.1f}")
        print(f"{label}read_vs_json_module_ratio: {best['rn'] / best['rb']:.3f}")


if __name__ == "__main__":
    main()
