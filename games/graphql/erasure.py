"""GraphQL mutations of erasure: erasePlayer (app key) and eraseMe (player token), the operations of
games/operations/erasure.py that REST serves as DELETE /players/{id} and DELETE /me."""

from __future__ import annotations

from typing import Any

import graphene

from games import operations as ops
from games.accounts import Principal
from games.graphql.base import OperationMutation
from games.graphql.types import Error


class ErasedPayload(graphene.ObjectType):
    id = graphene.Int(description="The erased player (null on error)")
    erased = graphene.Boolean(required=True, description="True once the player is erased")
    erased_at = graphene.String(description="When they were erased: the same on every repeat (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)


class _Erase(OperationMutation):
    class Meta:
        abstract = True

    @classmethod
    def refused(cls, error: Error) -> ErasedPayload:
        return ErasedPayload(id=None, erased=False, erased_at=None, errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: dict[str, Any]) -> ErasedPayload:
        return ErasedPayload(**out, errors=[])


class ErasePlayer(_Erase):
    class Meta:
        operation = ops.ERASE_PLAYER

    Output = ErasedPayload


class EraseMe(_Erase):
    class Meta:
        operation = ops.ERASE_ME

    Output = ErasedPayload


class ErasureMutations(graphene.ObjectType):
    erase_player = ErasePlayer.Field()
    erase_me = EraseMe.Field()
