"""Django admin for tables and everything stored about them; the move log is read-only."""

from django.contrib import admin

from games.models import Hand, Move, Player, ScoreRow, Seat, Table


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0


@admin.register(Table)
class TableAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "hand_number", "version", "created_at")
    list_filter = ("status",)
    readonly_fields = ("version", "seed", "state", "hand_number")
    inlines = [SeatInline]


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "created_at")
    search_fields = ("name",)


@admin.register(Hand)
class HandAdmin(admin.ModelAdmin):
    list_display = ("table", "number", "pass_direction", "finished")


@admin.register(ScoreRow)
class ScoreRowAdmin(admin.ModelAdmin):
    list_display = ("table", "hand_number", "position", "points", "total")


@admin.register(Move)
class MoveAdmin(admin.ModelAdmin):
    """Append-only: the admin can read the log but never add, change or delete a move."""

    list_display = ("table", "seq", "kind", "position", "created_at")
    list_filter = ("kind",)

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False
