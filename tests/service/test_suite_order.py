"""The suite's own scheduling (tests/parallel.py): each file's seconds from a junit report, and a
run that hands whole files to its workers takes the longest first."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import parallel

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.api.test_api" name="test_a" time="1.25"/>
<testcase classname="tests.api.test_api" name="test_b[4-classic]" time="2.5"/>
<testcase classname="tests.e2e.test_web.TestPage" name="test_c" time="4"/>
<testcase classname="tests.e2e.test_web" name="test_d" time="0.5"/>
</testsuite></testsuites>
"""


def test_a_report_gives_each_files_seconds_its_test_classes_included(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    assert parallel.record(report) == {"tests/api/test_api.py": 3.8, "tests/e2e/test_web.py": 4.5}


def _items(*nodeids: str) -> list[Any]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


@pytest.mark.parametrize("dist", ["loadfile", "load", "no"])
def test_whole_files_go_longest_first_and_a_file_not_recorded_counts_as_the_median(
    dist: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"a.py": 1.0, "b.py": 9.0, "d.py": 3.0}))
    monkeypatch.setattr(parallel, "DURATIONS", durations)
    collected = ["a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "d.py::t1", "b.py::t2"]
    items = _items(*collected)
    config: Any = SimpleNamespace(option=SimpleNamespace(dist=dist))
    parallel.pytest_collection_modifyitems(config, items)
    if dist == "loadfile":  # c.py (not recorded) weighs d.py's 3.0, the median, and came first
        assert [i.nodeid for i in items] == [
            "b.py::t1",
            "b.py::t2",
            "c.py::t1",
            "d.py::t1",
            "a.py::t1",
            "a.py::t2",
        ]
    else:  # single tests to whichever worker is free: the collection's order is kept
        assert [i.nodeid for i in items] == collected


def test_every_file_of_the_record_still_exists() -> None:
    root = Path(parallel.__file__).resolve().parent.parent
    recorded = json.loads(parallel.DURATIONS.read_text())
    assert recorded and all((root / path).is_file() for path in recorded)
