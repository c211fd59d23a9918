"""DRF authentication by project API token (``Authorization: Bearer arg_…`` or ``Token arg_…``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions

from .models import ApiToken
from .services import api_token_authenticate


class ApiClientUser(AnonymousUser):
    """The principal of a client-app token: authenticated, but no person and no staff rights."""

    def __init__(self, token: ApiToken) -> None:
        self.token = token
        # django-stubs types AnonymousUser.username as Literal[""]; a client's principal has a name
        self.username = f"client:{token.name}"  # type: ignore[assignment]

    @property
    def is_authenticated(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_anonymous(self) -> bool:  # type: ignore[override]
        return False

    def __str__(self) -> str:
        return self.username


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode("latin-1").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be '<Bearer|Token> <key>'")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("token contains invalid characters") from exc
        token = api_token_authenticate(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed("invalid, revoked or expired token")
        user = token.user if token.user_id is not None else ApiClientUser(token)
        return user, token

    def authenticate_header(self, request: Any) -> str:
        return "Bearer"
