"""The live OpenAPI document as schemathesis loads it, and the checks every answer must pass."""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hearts_service.wsgi import application

# The event streams never end and need an ASGI server: tests/streams/test_streams.py checks every
# event they send against the same document on a real server.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application).exclude(
    path_regex=r"/stream$"
)


@schemathesis.check
def error_code_is_documented(ctx: Any, response: Any, case: schemathesis.Case) -> None:
    """An error answer carries one of the codes its operation lists for that status (`x-error-codes`);
    an undocumented status is status_code_conformance's to report."""
    if response.status_code < 400:
        return None
    documented = case.operation.definition.raw["responses"].get(str(response.status_code), {})
    if "x-error-codes" not in documented:
        return None
    code, listed = response.json().get("code"), documented["x-error-codes"]
    assert code in listed, (
        f"{case.operation.label} answered {response.status_code} {code!r}: not among {listed}"
    )
    return None


CONFORMS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    error_code_is_documented,
]
