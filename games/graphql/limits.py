"""Abuse limits for GraphQL: a maximum depth and a maximum cost, checked before anything runs."""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)

LIST_COST = 10  # a list without `first` counts as this many items
MAX_FIRST = 100  # the largest page a `first` argument may ask for


def _walk(
    selections: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    depth: int,
    seen: frozenset[str],
) -> tuple[int, int]:
    """(depth, cost) of a selection set, fragments expanded; a field's children cost as many
    times as the page it asks for (`first`, else LIST_COST for list-valued fields)."""
    if selections is None:
        return depth, 0
    deepest, cost = depth, 0
    for node in selections.selections:
        if isinstance(node, FieldNode):
            sub_depth, sub_cost = _walk(node.selection_set, fragments, depth + 1, seen)
            deepest = max(deepest, sub_depth)
            cost += 1 + sub_cost * _multiplier(node)
        elif isinstance(node, InlineFragmentNode):
            sub_depth, sub_cost = _walk(node.selection_set, fragments, depth, seen)
            deepest, cost = max(deepest, sub_depth), cost + sub_cost
        elif isinstance(node, FragmentSpreadNode):
            name = node.name.value
            if name in seen or name not in fragments:
                continue  # cycles and unknown fragments are reported by the standard rules
            sub_depth, sub_cost = _walk(fragments[name].selection_set, fragments, depth, seen | {name})
            deepest, cost = max(deepest, sub_depth), cost + sub_cost
    return deepest, cost


_LISTS = {"moves", "events", "hands", "seats", "tricks", "scoresheet", "cards", "trick"}


def _multiplier(node: FieldNode) -> int:
    for arg in node.arguments or ():
        if arg.name.value == "first":  # a variable may ask for the largest page
            return max(1, int(arg.value.value)) if isinstance(arg.value, IntValueNode) else MAX_FIRST
    return LIST_COST if node.name.value in _LISTS else 1


def _measure(context: ValidationContext, node: OperationDefinitionNode) -> tuple[int, int]:
    fragments = {
        d.name.value: d for d in context.document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return _walk(node.selection_set, fragments, 0, frozenset())


def limits_rule(max_depth: int, max_cost: int) -> type[ValidationRule]:
    """A validation rule refusing an operation deeper than `max_depth` or costlier than `max_cost`."""

    class Limits(ValidationRule):
        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            depth, cost = _measure(self.context, node)
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
