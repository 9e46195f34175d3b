"""URL routes for the whole service; each app's API is mounted here under its own prefix."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from hearts_service.views import healthz

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("games.api.urls")),
]
