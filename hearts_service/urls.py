"""URL routes for the whole service; each app's API is mounted here under its own prefix."""

from pathlib import Path

import drf_spectacular_sidecar
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from games.graphql.view import HeartsGraphQLView
from games.infra.metrics import metrics_view
from hearts_service import health
from hearts_service.views import healthz, not_found, readyz

SIDECAR = Path(drf_spectacular_sidecar.__file__).parent / "static" / "drf_spectacular_sidecar"

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", healthz, name="healthz"),
    # Prometheus; guarded, see games.infra.metrics._allowed; with the database, Redis and queue gauges
    path("metrics", metrics_view, {"scraped": health.REGISTRY}, name="metrics"),
    path("readyz", readyz, name="readyz"),  # database and Redis answer (deploy/: readinessProbe)
    path("admin/", admin.site.urls),
    path("api/v1/", include("games.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("graphql/", HeartsGraphQLView.as_view(), name="graphql"),
    path("graphql", HeartsGraphQLView.as_view()),  # no redirect: a POST must not lose its body
    path("static/", include("games.graphql.urls")),  # GraphiQL's pinned files (games/static/graphiql/)
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema", template_name="games/redoc.html")),
    # The pinned Swagger UI and Redoc assets (drf-spectacular-sidecar), served by this process so the
    # documentation pages work offline and without collectstatic.
    path("static/drf_spectacular_sidecar/<path:path>", serve, {"document_root": SIDECAR}),
    re_path(r"^api/", not_found),  # every other /api/ path: the API's JSON 404, DEBUG or not
    path("play/", include("hearts_service.web")),  # the reference web client (web/)
]

handler400 = "hearts_service.views.bad_request"
handler404 = "hearts_service.views.not_found"
handler500 = "hearts_service.views.server_error"
