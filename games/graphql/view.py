"""The /graphql/ endpoint: bearer authentication, strict request parsing, limits, per-operation rate
limits and coded errors.

Every answer is `{"data"?, "errors"?}` and every error carries `extensions.code`. A client's
mistake is a 400 with its own code (never `internal_error`): `malformed_request` (not JSON, too
deeply nested), `invalid_request` (not an object with a string `query`: a batch, null, a number),
`invalid_query` (syntax, unknown fields, unknown operation), `query_too_deep`,
`query_too_complex`, `too_many_aliases`, `invalid_variables` (a variable of the wrong type), 405
`method_not_allowed` (a mutation sent with GET), 415 `unsupported_media_type`. Every `message`
is in the request's language, as REST's `detail` (games/messages.py).

Rate limits count each root field executed (every alias of `createGuest` is one guest created,
counted as one), so no request can do more than the caller's remaining allowance; a request that
executes no root field counts once, as a REST request does (and is a 429 when the caller is
over a limit already). A player's pass, play or moon choice
at their own table on their turn is never limited.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView
from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    default_field_resolver,
    execute,
    get_operation_ast,
    parse,
    specified_rules,
    validate,
)
from graphql.error import GraphQLSyntaxError
from graphql.execution.values import get_variable_values

from games import messages
from games.accounts import Principal, bearer_secret, principal_from_header
from games.errors import ServiceError
from games.graphql.limits import limits_rule
from games.infra import metrics, ratelimit
from games.operations import scopes
from hearts_service import jsonbody, outages

log = logging.getLogger(__name__)

MAX_DEPTH = 12
MAX_COST = 12_000  # a page of 100 moves with every field of every event type (id and table included) fits
MAX_ERRORS = 20  # validation errors answered at most


class _Checked:
    """The documents this process has parsed and validated, by query text (most recently used
    kept): a client sends the same few operations again and again (a bot's `submitAction`, its
    `table` query), and parsing and validating one cost more than running it (issue 37). What
    validation finds depends on the document and the schema only (the limits count a variable at
    its largest allowed value), so a kept result is what checking again would give."""

    SIZE = 512  # documents kept
    LONGEST = 20_000  # characters: a longer query is checked each time, never kept

    def __init__(self) -> None:
        self.found: OrderedDict[str, tuple[DocumentNode, list[GraphQLError]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, query: str) -> tuple[DocumentNode, list[GraphQLError]] | None:
        with self.lock:
            found = self.found.get(query)
            if found is not None:
                self.found.move_to_end(query)
            return found

    def put(self, query: str, checked: tuple[DocumentNode, list[GraphQLError]]) -> None:
        if len(query) > self.LONGEST:
            return
        with self.lock:
            self.found[query] = checked
            while len(self.found) > self.SIZE:
                self.found.popitem(last=False)


_checked = _Checked()
_ACTIONS = frozenset({"passCards", "playCard", "chooseMoon", "submitAction"})


class Refused(Exception):
    """A request refused before it runs: answered `{"errors": [...]}` with this status."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def _count(request: HttpRequest, field: str, args: dict[str, Any]) -> None:
    """One root field about to run counts once against the caller's rate limits, except a
    player's own-turn action; RateLimited when over."""
    request.operations_counted = getattr(request, "operations_counted", 0) + 1  # type: ignore[attr-defined]
    if not ratelimit.enabled():
        return
    principal: Principal | None = getattr(request, "principal", None)
    try:
        _charge_request(request)
    except ratelimit.RateLimited:
        # Only an operation over a limit pays for the turn lookup (it reads the game state).
        if principal is None or not _own_turn_action(principal, field, args):
            raise


def limit_root_fields(schema: GraphQLSchema) -> None:
    """Wrap the resolver of every root query and mutation field with `_count` (once per schema):
    only root fields pay for it, unlike a middleware, which wraps every field of the answer. A
    query field also checks the scope an app key needs for it (games.operations.scopes; a
    mutation's operation checks its own)."""
    for root in (schema.query_type, schema.mutation_type):
        for name, field in root.fields.items() if root else ():
            if getattr(field.resolve, "counted", False):
                continue
            scope = scopes.graphql_read(name) if root is schema.query_type else None
            field.resolve = _counted(field.resolve or default_field_resolver, scope)


def _counted(resolve: Any, scope: str | None = None) -> Any:
    def counted(source: Any, info: Any, **args: Any) -> Any:
        _count(info.context, info.field_name, args)
        principal: Principal | None = getattr(info.context, "principal", None)
        if principal is not None:
            principal.require_scope(scope)  # missing_scope, as this field's error
        return resolve(source, info, **args)

    counted.counted = True  # type: ignore[attr-defined]
    return counted


def _own_turn_action(principal: Principal, field: str, args: dict[str, Any]) -> bool:
    if field not in _ACTIONS or principal.player is None:
        return False
    table_id = args.get("table_id", args.get("tableId"))
    return isinstance(table_id, int) and ratelimit.in_turn(principal, table_id)


@method_decorator(csrf_exempt, name="dispatch")  # bearer tokens, never cookies: no CSRF to guard
class HeartsGraphQLView(GraphQLView):
    """GraphiQL in a browser; JSON for clients. `Authorization: Bearer <app key or player token>`
    sets the caller (absent: only createGuest works; bad: 401)."""

    graphiql = True
    # GraphiQL from this server's own pinned files (games/static/graphiql/README.md), never a CDN:
    # the versions graphene-django pins, each checked by its subresource-integrity hash.
    graphiql_template = "games/graphiql.html"
    react_version = "17.0.2"
    react_sri = "sha256-Ipu/TQ50iCCVZBUsZyNJfxrDk0E2yhaEIz0vqI+kFG8="
    react_dom_sri = "sha256-nbMykgB6tsOFJ7OdVmPpdqMFVk4ZsqWocT6issAPUF0="
    graphiql_version = "2.4.7"
    graphiql_sri = "sha256-n/LKaELupC1H/PU6joz+ybeRJHT2xCdekEt6OYMOOZU="
    graphiql_css_sri = "sha256-OsbM+LQHcnFHi0iH7AUKueZvDcEBoy/z4hJ7jx1cpsM="
    subscriptions_transport_ws_version = "5.13.1"  # graphql-ws
    subscriptions_transport_ws_sri = "sha256-EZhvg6ANJrBsgLvLAa0uuHNLepLJVCFYS+xlb5U/bqw="
    graphiql_plugin_explorer_version = "0.1.15"
    graphiql_plugin_explorer_sri = "sha256-3hUuhBXdXlfCj6RTeEkJFtEh/kUG+TCDASFpFPLrzvE="
    graphiql_plugin_explorer_css_sri = "sha256-fA0LPUlukMNR6L4SPSeFqDTYav8QdWjQ2nr559Zln1U="
    # graphql-core's own rules (unknown fields, types, variables...) and then the limits: a
    # rules list replaces the standard rules, so they are named here.
    validation_rules = (*specified_rules, limits_rule(MAX_DEPTH, MAX_COST))

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        request.principal = None  # type: ignore[attr-defined]
        try:
            self._authenticate(request)
            if request.method not in ("GET", "POST"):
                raise Refused(
                    405, "method_not_allowed", "GraphQL takes GET (queries) and POST", {"Allow": "GET, POST"}
                )
            if request.method == "GET" and self.can_display_graphiql(request, {}):
                page: HttpResponse = super().dispatch(request, *args, **kwargs)  # the GraphiQL page
                return page
            query, variables, operation_name = self._params(request)
            body, status, headers = self._run(request, query, variables, operation_name)
        except Refused as exc:
            body, status, headers = {"errors": [_coded(exc.message, exc.code)]}, exc.status, exc.headers
        if not getattr(request, "operations_counted", 0) and status != 401:
            try:
                _charge_request(request)
            except ratelimit.RateLimited as exc:  # over the limit already: that comes first, as in REST
                error = HeartsGraphQLView.format_error(GraphQLError("", original_error=exc))
                body, status, headers = {"errors": [error]}, 429, {"Retry-After": str(exc.retry_after)}
        for error in body.get("errors", ()):
            metrics.refused(error["extensions"]["code"], "graphql")
        return JsonResponse(body, status=status, headers=headers)

    # -- the request ----------------------------------------------------------------------

    @staticmethod
    def _authenticate(request: HttpRequest) -> None:
        header = request.headers.get("Authorization", "")
        try:
            principal = principal_from_header(header)
        except ServiceError as exc:
            raise Refused(401, exc.code, exc.message) from exc
        if principal is not None:
            if principal.player is not None:
                messages.prefer(principal.player.language)  # wins over Accept-Language
            request.principal = principal  # type: ignore[attr-defined]
            request.bearer = bearer_secret(header)  # type: ignore[attr-defined]

    @staticmethod
    def _params(request: HttpRequest) -> tuple[str, dict[str, Any] | None, str | None]:
        """(query, variables, operationName) of a GET query string or a POST body, checked."""
        if request.method == "GET":
            data: Any = {k: request.GET.get(k) for k in ("query", "variables", "operationName")}
            if data["variables"] is not None:
                try:
                    data["variables"] = jsonbody.loads(data["variables"])
                except jsonbody.JSONBodyError as exc:
                    raise Refused(400, "invalid_variables", f"variables: {exc.detail}") from exc
        else:
            kind = request.content_type
            if kind == "application/graphql":
                try:
                    data = {"query": request.body.decode("utf-8")}
                except UnicodeDecodeError as exc:
                    raise Refused(400, "malformed_request", "the body is not UTF-8") from exc
            elif kind == "application/json":
                try:
                    data = jsonbody.loads(request.body)
                except jsonbody.JSONBodyError as exc:
                    raise Refused(400, exc.code, exc.detail) from exc
            else:
                raise Refused(415, "unsupported_media_type", "send application/json (or application/graphql)")
        if isinstance(data, list):
            raise Refused(400, "invalid_request", "batched requests are not supported: send one object")
        if not isinstance(data, dict):
            raise Refused(400, "invalid_request", 'a GraphQL request is an object: {"query": "..."}')
        query, variables, name = data.get("query"), data.get("variables"), data.get("operationName")
        if not isinstance(query, str) or not query.strip():
            raise Refused(400, "invalid_request", "query must be a non-empty string")
        if variables is not None and not isinstance(variables, dict):
            raise Refused(400, "invalid_variables", "variables must be an object")
        if name is not None and not isinstance(name, str):
            raise Refused(400, "invalid_request", "operationName must be a string")
        return query, variables, name

    def prepare(
        self, query: str, variables: dict[str, Any] | None, operation_name: str | None
    ) -> tuple[DocumentNode, OperationDefinitionNode] | dict[str, Any]:
        """The parsed operation, checked against the schema, the limits (depth, cost, aliases) and
        its variables: the same checks over HTTP and over the WebSocket (games/graphql/socket.py).
        Refused, or the body of a 400 listing the errors."""
        assert self.schema is not None  # the view is built with the schema (urls.py)
        schema = self.schema.graphql_schema
        limit_root_fields(schema)  # once per schema: a no-op after the first request
        known = _checked.get(query)
        if known is not None:
            document, errors = known
        else:
            try:
                document = parse(query)
                errors = validate(schema, document, self.validation_rules, max_errors=MAX_ERRORS)
            except GraphQLSyntaxError as exc:
                raise Refused(400, "invalid_query", exc.message) from exc
            except RecursionError as exc:
                raise Refused(400, "query_too_deep", f"the query is nested deeper than {MAX_DEPTH}") from exc
            _checked.put(query, (document, errors))
        if errors:
            return {"errors": [self.format_error(e) for e in errors]}
        operation = get_operation_ast(document, operation_name)
        if operation is None:
            raise Refused(400, "invalid_query", "no such operation: name one with operationName")
        coerced = get_variable_values(
            schema, operation.variable_definitions or (), variables or {}, max_errors=MAX_ERRORS
        )
        if isinstance(coerced, list):
            return {"errors": [_coded(e.message, "invalid_variables") for e in coerced]}
        return document, operation

    def _run(
        self, request: HttpRequest, query: str, variables: dict[str, Any] | None, operation_name: str | None
    ) -> tuple[dict[str, Any], int, dict[str, str]]:
        prepared = self.prepare(query, variables, operation_name)
        if isinstance(prepared, dict):
            return prepared, 400, {}
        document, operation = prepared
        if operation.operation == OperationType.SUBSCRIPTION:
            msg = "subscriptions run over a WebSocket at /graphql/ (graphql-transport-ws or graphql-ws)"
            raise Refused(405, "method_not_allowed", msg, {"Allow": "GET, POST"})
        if request.method == "GET" and operation.operation != OperationType.QUERY:
            raise Refused(405, "method_not_allowed", "send mutations with POST", {"Allow": "POST"})
        return self.run_prepared(request, document, variables, operation_name)

    def run_prepared(
        self,
        request: Any,
        document: DocumentNode,
        variables: dict[str, Any] | None,
        operation_name: str | None,
    ) -> tuple[dict[str, Any], int, dict[str, str]]:
        """Execute a prepared query or mutation as `request`'s caller (an HTTP request, or one
        operation of a WebSocket): its answer body, HTTP status and headers."""
        assert self.schema is not None  # the view is built with the schema (urls.py)
        schema = self.schema.graphql_schema
        result = execute(
            schema,
            document,
            context_value=request,
            variable_values=variables,
            operation_name=operation_name,
        )
        assert isinstance(result, ExecutionResult)  # no async resolvers
        return self._answer(result, getattr(request, "operations_counted", 0))

    def _answer(self, result: ExecutionResult, ran: int) -> tuple[dict[str, Any], int, dict[str, str]]:
        body: dict[str, Any] = {"data": result.data}
        if not result.errors:
            return body, 200, {}
        body["errors"] = [self.format_error(e) for e in result.errors]
        limited = [
            e.original_error for e in result.errors if isinstance(e.original_error, ratelimit.RateLimited)
        ]
        if limited and len(limited) == ran:  # the limit refused every operation: nothing ran
            retry = max(exc.retry_after for exc in limited)
            return body, 429, {"Retry-After": str(retry)}
        originals = [e.original_error for e in result.errors if e.original_error is not None]
        down = next((error for error in originals if outages.unavailable(error)), None)
        if down is not None:
            outages.renew_connections(down)
            return body, 503, {"Retry-After": str(outages.RETRY_AFTER_SECONDS)}
        return body, 200, {}

    @staticmethod
    def format_error(error: Exception) -> dict[str, Any]:
        """Every error carries extensions.code: the service's code, or a GraphQL one."""
        formatted: dict[str, Any] = GraphQLView.format_error(error)
        original = getattr(error, "original_error", None)
        extensions = formatted.setdefault("extensions", {})
        if isinstance(original, ServiceError):
            extensions["code"] = original.code
            for name, value in original.details.items():  # its structured fields, as REST's body has
                extensions.setdefault(name, value)
            formatted["message"] = original.detail
        elif isinstance(original, ratelimit.RateLimited):
            body = original.body()
            formatted["message"] = body.pop("detail")
            extensions.update(body)
        elif original is not None and outages.unavailable(original):
            extensions["code"] = "service_unavailable"
            formatted["message"] = messages.detail("service_unavailable", outages.DETAIL)
        elif isinstance(error, GraphQLError) and original is None:
            code = extensions.setdefault("code", "invalid_query")
            formatted["message"] = messages.detail(code, formatted["message"], extensions)
        else:
            log.error("GraphQL resolver failed", exc_info=original or error)
            extensions["code"] = "internal_error"
            formatted["message"] = messages.detail("internal_error", "internal error")
        return formatted


def _coded(message: str, code: str) -> dict[str, Any]:
    return {"message": messages.detail(code, message), "extensions": {"code": code}}


def _charge_request(request: HttpRequest) -> None:
    """Count one operation of this request's caller (its address without a bearer); also charged
    once for a request that ran no root field, as a REST request is. RateLimited when over. The
    answer carries the RateLimit fields of the last count."""
    principal: Principal | None = getattr(request, "principal", None)
    try:
        if principal is None:
            quotas = ratelimit.check_address(ratelimit.client_address(request.META))
        else:
            quotas = ratelimit.check_principal(principal)
    except ratelimit.RateLimited as exc:
        request.rate_limit_headers = ratelimit.headers(exc.quotas)  # type: ignore[attr-defined]
        raise
    # The last count's fields go on the answer (hearts_service.limits.RateLimitHeaders), as in REST.
    request.rate_limit_headers = ratelimit.headers(quotas)  # type: ignore[attr-defined]
