"""The service's OpenAPI document, and its schemas as JSON Schema 2020-12: what the bodies' schemas
are built from."""

from __future__ import annotations

from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_COMPONENTS = "#/components/schemas/"


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, as GET /api/schema/ serves it."""
    from drf_spectacular.generators import SchemaGenerator

    document: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return document


def json_schema(node: Any, refs: set[str]) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema 2020-12: `$ref`s point into `$defs` (and are collected
    in `refs`), `nullable` admits null, `example` becomes `examples`, extensions are dropped."""
    if isinstance(node, list):
        return [json_schema(item, refs) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("nullable", "discriminator") or key.startswith("x-"):
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith(_COMPONENTS):
            refs.add(value.removeprefix(_COMPONENTS))
            out[key] = "#/$defs/" + value.removeprefix(_COMPONENTS)
        elif key == "example":
            out["examples"] = [value]
        elif key == "properties":
            out[key] = {name: json_schema(field, refs) for name, field in value.items()}
        else:
            out[key] = json_schema(value, refs)
    for bound in ("Minimum", "Maximum"):  # OpenAPI 3.0's boolean exclusiveMinimum/Maximum
        if out.get(f"exclusive{bound}") is True:
            out[f"exclusive{bound}"] = out.pop(bound.lower())
        elif out.get(f"exclusive{bound}") is False:
            del out[f"exclusive{bound}"]
    if node.get("nullable"):
        if isinstance(out.get("type"), str) and "enum" not in out:
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out
