"""After every games test, each table it finished must replay from its seed and move log exactly."""

from collections.abc import Iterator

import pytest

from games.engine import state_to_dict
from games.models import Table
from games.services import table_replay

CHECKED: list[int] = []


@pytest.fixture(autouse=True)
def finished_tables_replay_exactly(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        yield
        return
    # Requested here so that the database is torn down after this check, not before it.
    request.getfixturevalue("transactional_db" if marker.kwargs.get("transaction") else "db")
    yield
    for table in Table.objects.filter(status=Table.Status.FINISHED):
        replayed = table_replay(table)
        assert replayed is not None, f"table {table.pk} has no start in its log"
        assert state_to_dict(replayed) == table.state, f"table {table.pk} does not replay"
        last = table.score_rows.filter(hand_number=table.hand_number).order_by("position")
        assert [r.total for r in last] == replayed.totals
        CHECKED.append(table.pk)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if CHECKED:
        terminalreporter.write_line(f"finished tables replayed from their move logs: {len(CHECKED)}")
