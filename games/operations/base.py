"""What an operation is: its name, description, input, who may call it, its errors and its service call.

Both adapters run an operation the same way (games/api/run.py for REST, games/graphql/base.py for
GraphQL): they read their own wire (a JSON body, a path and headers; or arguments), hand the
operation one input dict, and answer with what `run` returns. So the code that turns arguments into
a service call, the limits of every field and the text that documents them exist once, here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from django.db import transaction

from games import audit, quotas
from games.accounts import SCOPES, Principal
from games.errors import Code
from games.models import App
from games.operations.fields import StrictSerializer, validated
from games.services import Idempotency


class Access(Enum):
    """Who may call an operation (checked before its input is read)."""

    ANYONE = "anyone"  # no credentials (createGuest)
    ANY = "any"  # an app key or a player token
    PLAYER = "player"  # a player token: 403 player_token_required otherwise
    APP = "app"  # an app key: 403 app_key_required otherwise


# Codes every operation of a kind may answer, added to its own by the adapters' documentation.
ACCESS_CODES: dict[Access, tuple[Code, ...]] = {
    Access.ANYONE: (),
    Access.ANY: (),
    Access.PLAYER: (Code.player_token_required,),
    Access.APP: (Code.app_key_required,),
}
VERSION_CODES = (Code.invalid_version, Code.stale_version)  # If-Match / expectedVersion
IDEMPOTENCY_CODES = (Code.invalid_idempotency_key, Code.idempotency_key_reused)  # Idempotency-Key


@dataclass(frozen=True)
class Call:
    """One call of an operation: who makes it (None: anyone, for an operation without credentials),
    its checked input, and its idempotency key (None without one, or for an operation that takes none)."""

    caller: Principal | None
    input: dict[str, Any]
    idempotency: Idempotency | None = None

    @property
    def principal(self) -> Principal:
        """The caller of an operation that needs credentials (the adapters authenticated it)."""
        assert self.caller is not None, "an operation open to anyone has no principal"
        return self.caller

    @property
    def app(self) -> App:
        """The calling app, for an operation only an app key may call (Access.APP)."""
        app = self.principal.app
        assert app is not None and self.principal.is_app, "not an app key: declare Access.APP"
        return app

    def __getitem__(self, name: str) -> Any:
        return self.input[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.input.get(name, default)


@dataclass(frozen=True)
class Operation:
    """One operation of the API.

    `name` is REST's operationId and GraphQL's field. `input` declares the fields of the body (or of
    the arguments), with their limits and descriptions; `path` names the inputs REST takes from the
    URL (`table_id`), which GraphQL takes as arguments. `run` is the one service call. `errors` are
    the codes the operation itself can answer; those of its access, version and idempotency key are
    added by `codes()`. A `versioned` operation takes the version the client saw (REST: If-Match or
    `expected_version`; GraphQL: `expectedVersion`); an `idempotent` one takes a retry key.
    `scope` is what an app key needs to call it (games.accounts.Scope; 403 missing_scope without):
    every operation an app key may call declares one, and both adapters check it through `allowed`.
    """

    name: str
    description: str
    input: type[StrictSerializer]
    run: Callable[[Call], Any]
    access: Access = Access.ANY
    errors: tuple[Code | tuple[Code, int], ...] = ()
    path: tuple[str, ...] = ()
    versioned: bool = False
    idempotent: bool = False
    denied: str = ""  # the message of an access refusal ("": the default one)
    scope: str | None = None  # the scope an app key needs (None: no app key may call it)
    # The quota (games/quotas.py) a call takes one more of (its creation runs holding the app's
    # row; 429 quota_exceeded when full), and how an app key's call is recorded in the audit trail
    # (games/audit.py; None: as any operation of a configuration scope, from its path, or not at all).
    quota: str | None = None
    audited: audit.Audited | None = None

    def __post_init__(self) -> None:
        app_may_call = self.access in (Access.ANY, Access.APP)
        assert app_may_call == (self.scope is not None), f"{self.name}: name its scope"
        assert self.scope is None or self.scope in SCOPES, f"{self.name}: unknown scope {self.scope}"

    def codes(self) -> tuple[Code | tuple[Code, int], ...]:
        """Every code this operation can answer with, its own first."""
        extra: list[Code] = [*ACCESS_CODES[self.access], *([Code.missing_scope] if self.scope else [])]
        if self.versioned:
            extra += VERSION_CODES
        if self.idempotent:
            extra += IDEMPOTENCY_CODES
        if self.quota is not None:
            extra.append(Code.quota_exceeded)
        return (*self.errors, *(c for c in extra if c not in self.errors))

    def allowed(self, principal: Principal) -> None:
        """Refuse a caller the operation is not for (ServiceError with a stable code)."""
        if self.access is Access.PLAYER:
            principal.require_player(*([self.denied] if self.denied else []))
        elif self.access is Access.APP:
            principal.require_app(self.denied or "only an app key can do this")
        principal.require_scope(self.scope)

    def parse(self, data: Any) -> dict[str, Any]:
        """The checked input (DRF ValidationError, 400 invalid_input, naming each bad field)."""
        return validated(self.input, data)

    def __call__(
        self, principal: Principal | None, data: dict[str, Any], idem: Idempotency | None = None
    ) -> Any:
        """Run it for `principal` on input already parsed (and the path's values added): within
        its quota, and recorded in the audit trail when an app key changes configuration; both in
        one transaction with the change."""
        call = Call(principal, data, idem)
        spec = self.audited_as(principal)
        if self.quota is None and spec is None:
            return self.run(call)
        with transaction.atomic():
            app = principal.app if principal is not None else None
            target = spec.target_id(app.pk, data) if spec is not None and app is not None else None
            before = spec.state(target) if spec is not None else None
            if self.quota is not None:
                with quotas.holding(app, self.quota):
                    out = self.run(call)
            else:
                out = self.run(call)
            if spec is not None and principal is not None and not getattr(out, "replayed", False):
                audit.record_operation(spec, self.name, principal, data, before, out)
        return out

    def audited_as(self, principal: Principal | None) -> audit.Audited | None:
        """How this call is recorded: an app key's call of a configuration operation (one that
        declares `audit`, or one of a configuration scope) is; anything else is not."""
        if principal is None or not principal.is_app or principal.app is None:
            return None
        if self.audited is not None:
            return self.audited
        if self.scope in audit.CONFIG_SCOPES:
            return audit.generic(self.path, self.scope)
        return None
