"""The GraphiQL page's files, served by this process (mounted under /static/): the pinned GraphiQL build
of games/static/graphiql/ and graphene-django's page script, so the page works offline and without
collectstatic."""

from __future__ import annotations

from pathlib import Path

import graphene_django
from django.urls import path
from django.views.static import serve

GRAPHIQL = Path(__file__).resolve().parent.parent / "static" / "graphiql"
GRAPHENE_DJANGO = Path(graphene_django.__file__).resolve().parent / "static" / "graphene_django"

urlpatterns = [
    path("graphiql/<path:path>", serve, {"document_root": GRAPHIQL}),
    path("graphene_django/<path:path>", serve, {"document_root": GRAPHENE_DJANGO}),
]
