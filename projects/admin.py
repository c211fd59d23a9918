from django.contrib import admin

from .models import ApiToken, Membership

# Projects themselves are administered in ``arg_platform.admin`` (archived, never deleted).


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["project", "role"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "prefix", "role", "user", "expires_at", "revoked_at", "last_used_at"]
    readonly_fields = ["prefix", "key_hash", "last_used_at"]
