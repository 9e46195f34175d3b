"""A table's engine state in PostgreSQL: the backend's CPU to write and read it as jsonb against text.

Why `Table.state` is a text column (games.models.JSONText) and not jsonb: the state is written whole
after every change and read whole, never queried inside, and jsonb parses (and TOAST compresses)
what it stores. Both columns get the same mid-game state (its compact JSON, as the service writes
it), interleaved statement by statement on one connection; the CPU is the backend process's own
(/proc/<pid>/stat), so the client's share is left out.

    python bench/state_column.py    # PostgreSQL of its own (bench/load.py's); DATABASE_URL: that one

Sizes: BENCH_ROUNDS rounds of BENCH_PLAYS statements of each kind (5 and 2,000 by default), the
state after BENCH_DEALS hands (5: a state of about 4 KB).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from games.engine import Options, State, state_to_dict  # pure: no Django set-up needed

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
STATEMENTS = int(os.environ.get("BENCH_PLAYS", "2000"))
HANDS = int(os.environ.get("BENCH_DEALS", "5"))
ROWS = 200
TICK = os.sysconf("SC_CLK_TCK")


def mid_game_state(hands: int) -> str:
    """The compact JSON of a 4-player game's state after `hands` hands of random legal moves."""
    state, rng = State.new_game(Options.from_dict({}), "bench-state-column", [], table="1"), random.Random(1)
    while state.hand_no <= hands and not state.is_over:
        seat = state.to_act()[0]
        state, _ = state.apply(seat, rng.choice(list(state.legal_actions(seat))))
    return json.dumps(state_to_dict(state), separators=(",", ":"))  # as games.models.compact_json


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def measure(url: str) -> None:
    doc = mid_game_state(HANDS)
    kinds = {"jsonb": "::jsonb", "text": ""}
    with psycopg.connect(url, autocommit=True) as conn:
        for kind in kinds:
            conn.execute(f"DROP TABLE IF EXISTS bench_state_{kind}")
            conn.execute(f"CREATE TABLE bench_state_{kind} (id int PRIMARY KEY, version int, state {kind})")
            rows = f"SELECT g, 0, %s{kinds[kind]} FROM generate_series(1, {ROWS}) g"
            conn.execute(f"INSERT INTO bench_state_{kind} {rows}", (doc,))
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        if not Path(f"/proc/{pid}/stat").exists():
            raise SystemExit("the PostgreSQL backend is not on this machine: its CPU cannot be read")
        spent: dict[str, float] = {f"{k}_{op}": 0.0 for k in kinds for op in ("write", "read")}
        for _ in range(ROUNDS):
            for kind, cast in kinds.items():  # interleaved: the machine's noise hits both alike
                write = f"UPDATE bench_state_{kind} SET version = version + 1, state = %s{cast} WHERE id = %s"
                before = backend_cpu(pid)
                for i in range(STATEMENTS):
                    conn.execute(write, (doc, 1 + i % ROWS))
                spent[f"{kind}_write"] += backend_cpu(pid) - before
                before = backend_cpu(pid)
                for i in range(STATEMENTS):
                    conn.execute(
                        f"SELECT id, version, state FROM bench_state_{kind} WHERE id = %s", (1 + i % ROWS,)
                    ).fetchone()
                spent[f"{kind}_read"] += backend_cpu(pid) - before
        for kind in kinds:
            conn.execute(f"DROP TABLE bench_state_{kind}")
    us = {name: seconds / (ROUNDS * STATEMENTS) * 1e6 for name, seconds in spent.items()}
    print(f"state_bytes: {len(doc)}")
    for op in ("write", "read"):
        print(f"jsonb_{op}_us: {us[f'jsonb_{op}']:.1f}")
        print(f"text_{op}_us: {us[f'text_{op}']:.1f}")
        ratio = us[f"text_{op}"] / us[f"jsonb_{op}"] if us[f"jsonb_{op}"] else float("nan")
        print(f"text_vs_jsonb_{op}_ratio: {ratio:.2f}")


def own_postgres() -> None:
    """bench/load.py's PostgreSQL (a cluster of its own in a scratch directory), for the run."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/load.py, imported as `load`
    import load

    with tempfile.TemporaryDirectory() as tmp:
        stack = load.Stack(Path(tmp))
        try:
            stack.init_postgres()
            stack.start_postgres()
            measure(f"postgresql://postgres@127.0.0.1:{stack.pg_port}/postgres")
        finally:
            stack.stop()


if __name__ == "__main__":
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        measure(url)
    else:
        own_postgres()
