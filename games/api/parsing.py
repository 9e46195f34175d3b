"""REST's request parsing: the strict JSON parser and the content negotiation that always answers JSON
(the fields that check a body strictly are the operations' inputs: games/operations/fields.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import Http404
from rest_framework import exceptions, parsers
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation

from hearts_service import jsonbody


class StrictJSONParser(parsers.JSONParser):
    """JSON bodies through hearts_service.jsonbody: bounded nesting, no NaN, UTF-8 only."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return jsonbody.loads(stream.read())
        except jsonbody.JSONBodyError as exc:
            raise exceptions.ParseError(exc.detail) from exc


class JSONOnly(BaseContentNegotiation):
    """An Accept header (or a `?format=`) the API cannot satisfy gets its one representation (JSON)
    anyway: a client that asks for XML gets an answer it can read, never a 406 or a 404 with a
    generic code."""

    def select_parser(self, request: Any, parsers: Iterable[Any]) -> Any:
        return DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(
        self, request: Any, renderers: Iterable[Any], format_suffix: str | None = None
    ) -> Any:
        try:  # the schema view offers YAML and JSON: a client's choice there is kept
            return DefaultContentNegotiation().select_renderer(request, renderers, format_suffix)
        except (exceptions.NotAcceptable, Http404):  # Http404: DRF's answer to an unknown ?format=
            renderer = next(iter(renderers))
            return renderer, renderer.media_type
