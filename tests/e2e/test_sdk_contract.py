"""Both SDKs wrap every operation of the OpenAPI document the service generates, or say why not.

The Python SDK declares what it wraps in code: each resource method is an `Operation` (or `Pages`,
`Stream`) naming its operationId, so `hearts_client._resources.operations(client)` is read from the
methods themselves. The TypeScript SDK sends every request through `HeartsClient.call(operationId,
...)` (or opens a stream with `openStream(operationId, ...)`), whose first argument `tsc` holds to
the document's `operations`; the operationIds are read from those calls in `src/`. An operation
neither SDK wraps fails here unless `LEFT_OUT` names it with a reason."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from hearts_client import AsyncHeartsClient, HeartsClient
from hearts_client._resources import operations

TS_SRC = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "src"
# A request of the TypeScript SDK: `.call("getTable", ...)`, `.call<"getTranscript", string>("getTranscript",
# ...)`, or a stream: `.openStream("streamTableEvents", ...)`.
TS_MARKER = re.compile(r"\.(?:call|openStream)(?:<[^>(]*>)?\(\s*\"(\w+)\"")

# operationId -> why an SDK does not wrap it (per SDK: "python", "typescript"). Empty today: both
# SDKs wrap every operation, the two SSE streams included (as iterators, `streams.table`).
LEFT_OUT: dict[str, dict[str, str]] = {}


def _operation_ids() -> set[str]:
    schema: dict[str, Any] = dict(SchemaGenerator().get_schema(request=None, public=True))
    return {
        operation["operationId"]
        for path in schema["paths"].values()
        for method, operation in path.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }


def _typescript_operations() -> set[str]:
    found: set[str] = set()
    for source in sorted(TS_SRC.glob("*.ts")):
        if source.name.endswith(".d.ts"):
            continue
        found |= set(TS_MARKER.findall(source.read_text()))
    return found


def _python_operations(client: Any) -> set[str]:
    return set(operations(client))


@pytest.mark.parametrize("sdk", ["python", "python-async", "typescript"])
def test_every_operation_is_wrapped_or_left_out_with_a_reason(sdk: str) -> None:
    document = _operation_ids()
    if sdk == "typescript":
        wrapped = _typescript_operations()
    else:
        cls = HeartsClient if sdk == "python" else AsyncHeartsClient
        wrapped = _python_operations(cls("http://hearts.test"))
    language = "typescript" if sdk == "typescript" else "python"
    left_out = {op for op, why in LEFT_OUT.items() if language in why}
    missing = document - wrapped - left_out
    assert not missing, f"{sdk} wraps no method for {sorted(missing)}: add one, or a reason in LEFT_OUT"
    unknown = wrapped - document
    assert not unknown, f"{sdk} names operationIds the document does not have: {sorted(unknown)}"
    stale = left_out & wrapped
    assert not stale, f"{sorted(stale)} are wrapped by {sdk}: take them out of LEFT_OUT"


def test_left_out_entries_give_a_reason_and_name_real_operations() -> None:
    document = _operation_ids()
    for operation_id, reasons in LEFT_OUT.items():
        assert operation_id in document, operation_id
        assert reasons and set(reasons) <= {"python", "typescript"}, operation_id
        assert all(len(why.split()) >= 3 for why in reasons.values()), operation_id


def test_the_sync_and_async_clients_wrap_the_same_methods() -> None:
    """One description, two transports: the same methods on the same operations."""
    assert operations(HeartsClient("http://hearts.test")) == operations(
        AsyncHeartsClient("http://hearts.test")
    )


def test_the_typescript_marker_finds_every_call() -> None:
    """Every `.call(` and `.openStream(` in the TypeScript sources is read as an operation (a request
    written another way would escape the check)."""
    for source in TS_SRC.glob("*.ts"):
        if source.name.endswith(".d.ts"):
            continue
        text = source.read_text()
        calls = len(re.findall(r"\.(?:call|openStream)(?:<[^>(]*>)?\(", text))
        assert calls == len(TS_MARKER.findall(text)), source.name
