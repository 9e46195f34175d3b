"""Abuse limits for GraphQL, checked before anything runs: depth, cost and the number of aliases.

The cost of an operation bounds the work it can cause: every field costs 1, and the fields below
a list cost as many times as the list can hold. A paginated list (`first`) holds at most its page;
a paginated object (a connection, an events page) passes its page down to the list inside it; any
other list counts as its bound below, the most a table can hold. Lists are found from the
schema's types, not from names, so a new list field is never counted as a single item. An item
of a list of an interface (the events) is one of its types: fragments on other types select
nothing from it, and a page costs its costliest mix of types (ITEMS_OF_TYPE).
Introspection (`__schema`, `__type`) is bounded apart, so that the standard introspection query
of any client or code generator passes: its size is set by the schema, not by the data, and the
only ways to make it large are to nest lists of types and fields in each other, refused beyond
MAX_INTROSPECTION_LISTS levels (the standard query nests three: types, fields, args), or `ofType`
absurdly deep, refused beyond MAX_INTROSPECTION_DEPTH.

graphene's `depth_limit_validator` is not used: it skips introspection fields entirely (it cannot
bound them) and raises on a spread of an undefined fragment (an internal error instead of the
standard rule's `invalid_query`); this walk computes depth and cost in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLObjectType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    get_named_type,
    get_nullable_type,
    is_abstract_type,
    is_list_type,
)

LIST_COST = 10  # an unpaginated list of a few items (seats, cards of a trick, legal cards...)
# Lists that can be longer than LIST_COST, at their largest.
LIST_BOUNDS = {
    "Table.hands": 60,  # hands of one game (a long game to a high target)
    "Table.scoresheet": 60,
    "Game.scoresheet": 60,
    "Game.tricks": 26,  # tricks of a hand (two packs)
    "Game.hand": 26,
    "Hand.moves": 120,  # every move of one hand: 104 plays with two packs, the passes, a moon choice
    "Trick.cards": 10,
    # The whole lists of what an app or a player grows, each at its cap (docs/rest.md#limits)
    "Query.invites": 20,  # INVITES_MAX
    "Query.bots": 100,  # BOTS_MAX
    "Query.webhooks": 20,  # WEBHOOK_MAX_PER_APP's default
    "Query.tournaments": 100,  # the newest 100 (tournamentPage pages them all)
}
EVENTS_PER_MOVE = (
    8  # the most events one move shows a viewer (measured: 6 from the engine, plus the table's own)
)
PAGE_ITEMS = {"EventsPage.events": EVENTS_PER_MOVE}  # items of a page's list per unit of `first`
# An item of a list of an interface is one of its types, and some types come at most so many times
# per move (one hand ends per move): a page of events costs, per move, its costliest mix of
# EVENTS_PER_MOVE events, each type at most its bound here (the others: EVENTS_PER_MOVE).
ITEMS_OF_TYPE = {
    "HandRevealedEvent": 1,
    "HandScoredEvent": 1,
    "GameOverEvent": 1,
    "TableFinishedEvent": 1,
    "RatingsChangedEvent": 1,
}
MAX_ALIASES = 30  # aliased fields in one document: one request is not a batch of hundreds
INTROSPECTION = frozenset({"__schema", "__type"})
MAX_INTROSPECTION_LISTS = 3
MAX_INTROSPECTION_DEPTH = 24  # graphql-core's standard query reaches 15 (its type references nest `ofType`)


@dataclass
class _Walk:
    context: ValidationContext
    fragments: dict[str, FragmentDefinitionNode]
    variables: dict[str, Any]

    def page(self, node: FieldNode, field: Any) -> int | None:
        """The page a field with a `first` argument asks for: its literal, else the argument's
        largest allowed value (a variable may ask for it), else its default."""
        arg = field.args.get("first")
        if arg is None:
            return None
        given = next((a.value for a in node.arguments or () if a.name.value == "first"), None)
        if isinstance(given, IntValueNode):
            return max(1, int(given.value))
        if given is None and isinstance(arg.default_value, int):
            return max(1, arg.default_value)
        return int((arg.extensions or {}).get("max_first", 500))

    def cost(
        self,
        selections: SelectionSetNode | None,
        parent: Any,
        depth: int,
        page: int | None,
        seen: frozenset[str],
    ) -> tuple[int, int]:
        """(depth, cost) of a selection set on type `parent`; `page` is the page size handed down
        by a paginated object to the list inside it."""
        if selections is None:
            return depth, 0
        deepest, total = depth, 0
        for node in selections.selections:
            if isinstance(node, FieldNode):
                name = node.name.value
                if name in INTROSPECTION and depth == 0:
                    self.introspection(node, depth + 1, 0, seen)
                    total += 1
                    continue
                fields = parent.fields if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) else {}
                field = fields.get(name)
                if field is None:  # __typename, or an unknown field (the standard rules report it)
                    total += 1
                    continue
                key = f"{parent.name}.{name}"
                own_page = self.page(node, field)
                child_page, times = None, 1
                if is_list_type(get_nullable_type(field.type)):
                    if own_page is not None:
                        times = own_page
                    elif page is not None:
                        times = page * PAGE_ITEMS.get(key, 1)
                    else:
                        times = LIST_BOUNDS.get(key, LIST_COST)
                elif own_page is not None:
                    child_page = own_page
                named = get_named_type(field.type)
                if is_abstract_type(named) and node.selection_set is not None:
                    sub_depth, sub_cost = self.mixed(node.selection_set, named, depth + 1, times, seen)
                    times = 1
                else:
                    sub_depth, sub_cost = self.cost(node.selection_set, named, depth + 1, child_page, seen)
                deepest = max(deepest, sub_depth)
                total += 1 + sub_cost * times
            else:
                if isinstance(node, InlineFragmentNode):
                    target, body = node.type_condition, node.selection_set
                else:
                    assert isinstance(node, FragmentSpreadNode)
                    name = node.name.value
                    if name in seen or name not in self.fragments:
                        continue  # cycles and unknown fragments are reported by the standard rules
                    seen = seen | {name}
                    target, body = self.fragments[name].type_condition, self.fragments[name].selection_set
                on = self.context.schema.get_type(target.name.value) if target else parent
                if (
                    isinstance(on, GraphQLObjectType)
                    and isinstance(parent, GraphQLObjectType)
                    and on is not parent
                ):
                    continue  # a fragment on another type than this item's: it selects nothing here
                sub_depth, sub_cost = self.cost(body, on or parent, depth, page, seen)
                deepest, total = max(deepest, sub_depth), total + sub_cost
        return deepest, total

    def mixed(
        self, selections: SelectionSetNode, abstract: Any, depth: int, items: int, seen: frozenset[str]
    ) -> tuple[int, int]:
        """(depth, cost) of `items` items of an interface or union: each item is one of its object
        types, costing what the selection asks of that type. Items come in groups of
        EVENTS_PER_MOVE (one move's events), each type at most ITEMS_OF_TYPE times per group;
        the costliest mix of a group counts."""
        deepest, each = depth, []
        for kind in self.context.schema.get_possible_types(abstract):
            sub_depth, sub_cost = self.cost(selections, kind, depth, None, seen)
            deepest = max(deepest, sub_depth)
            each.append((sub_cost, ITEMS_OF_TYPE.get(kind.name, EVENTS_PER_MOVE)))
        group = min(items, EVENTS_PER_MOVE)
        worst, left = 0, group
        for cost, bound in sorted(each, reverse=True):
            taken = min(bound, left)
            worst, left = worst + cost * taken, left - taken
        return deepest, -(-items // group) * worst if group else 0

    def introspection(self, node: Any, depth: int, lists: int, seen: frozenset[str]) -> None:
        """Refuse an introspection selection nested too deep or with too many list levels."""
        if depth > MAX_INTROSPECTION_DEPTH:
            raise _TooLarge(
                "query_too_deep",
                f"introspection nested {depth} deep is over the limit of {MAX_INTROSPECTION_DEPTH}",
                MAX_INTROSPECTION_DEPTH,
            )
        if lists > MAX_INTROSPECTION_LISTS:
            raise _TooLarge(
                "query_too_complex",
                f"introspection with {lists} nested lists of types, fields or arguments is over the "
                f"limit of {MAX_INTROSPECTION_LISTS}",
                MAX_INTROSPECTION_LISTS,
            )
        if node.selection_set is None:
            return
        for child in node.selection_set.selections:
            if isinstance(child, FieldNode):
                listy = child.name.value in _INTROSPECTION_LISTS
                self.introspection(child, depth + 1, lists + listy, seen)
            elif isinstance(child, InlineFragmentNode):
                self.introspection(child, depth, lists, seen)
            elif isinstance(child, FragmentSpreadNode):
                name = child.name.value
                if name not in seen and name in self.fragments:
                    self.introspection(self.fragments[name], depth, lists, seen | {name})


_INTROSPECTION_LISTS = frozenset(
    {"types", "fields", "args", "inputFields", "interfaces", "possibleTypes", "enumValues", "directives"}
)


class _TooLarge(Exception):
    def __init__(self, code: str, message: str, limit: int) -> None:
        super().__init__(message)
        self.code, self.limit = code, limit


def _aliases(document: Any) -> int:
    """Aliased fields anywhere in the document (each fragment counted once)."""
    count, stack = 0, list(document.definitions)
    while stack:
        node = stack.pop()
        if isinstance(node, FieldNode) and node.alias is not None:
            count += 1
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)
    return count


def limits_rule(max_depth: int, max_cost: int, max_aliases: int = MAX_ALIASES) -> type[ValidationRule]:
    """A validation rule refusing an operation deeper than `max_depth`, costlier than `max_cost`,
    or a document with more than `max_aliases` aliased fields."""

    class Limits(ValidationRule):
        def enter_document(self, node: Any, *_: Any) -> None:
            aliases = _aliases(node)
            if aliases > max_aliases:
                self.report_error(
                    GraphQLError(
                        f"{aliases} aliased fields is over the limit of {max_aliases}",
                        extensions={"code": "too_many_aliases", "limit": max_aliases, "aliases": aliases},
                    )
                )

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            root = self.context.schema.get_root_type(node.operation)
            if root is None:
                return  # an operation type the schema lacks: the standard rules report it
            fragments = {
                d.name.value: d
                for d in self.context.document.definitions
                if isinstance(d, FragmentDefinitionNode)
            }
            try:
                depth, cost = _Walk(self.context, fragments, {}).cost(
                    node.selection_set, root, 0, None, frozenset()
                )
            except _TooLarge as exc:
                self.report_error(
                    GraphQLError(str(exc), node, extensions={"code": exc.code, "limit": exc.limit})
                )
                return
            for value, limit, name, code in (
                (depth, max_depth, "depth", "query_too_deep"),
                (cost, max_cost, "cost", "query_too_complex"),
            ):
                if value > limit:
                    self.report_error(
                        GraphQLError(
                            f"query {name} {value} is over the limit of {limit}",
                            node,
                            extensions={"code": code, "limit": limit, name: value},
                        )
                    )

    return Limits
