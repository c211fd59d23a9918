"""Sign-in throttling: django-axes, fitted to the platform.

django-axes counts failed sign-ins per account and per client address (``AXES_LOCKOUT_PARAMETERS``);
either count reaching ``ARG_LOGIN_FAILURE_LIMIT`` within ``ARG_LOGIN_LOCKOUT_MINUTES`` locks that
account, or that address, out for ``ARG_LOGIN_LOCKOUT_MINUTES``. Its tables are the record of failed
sign-ins (``AccessFailureLog``), of the live counters and lock-outs (``AccessAttempt``, deleting a row
unlocks) and of successful sign-ins (``AccessLog``), all listed in the Django admin. The platform's own
audit trail is per project, and a failed sign-in has none.

What this module adds to axes' defaults, each named in settings:

* ``client_ip_address`` — whose address a request counts against: the connection's, or behind
  ``ARG_PROXY_COUNT`` reverse proxies the one the outermost proxy appended to ``X-Forwarded-For``
  (entries further left are written by the client and never trusted).
* ``LoginThrottleBackend`` — axes' backend, except that ``authenticate()`` called without a request
  (Django's test ``Client.login``, a shell) is not throttled instead of raising: there is no remote
  client to count, and every HTTP door (the sign-in form, the admin sign-in) passes its request.
* ``LoginAttemptHandler`` — a successful sign-in forgets the failures of that account *from that
  address* only. Axes' own reset forgets every failure of the account and every failure from the
  address, so whoever holds one account could sign in to it between guesses and guess the passwords
  of others from the same address forever.
* ``login_locked_out_response`` — the answer to a locked-out sign-in: the sign-in page saying so, with
  429 and ``Retry-After``.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from asgiref.sync import sync_to_async
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def client_ip_address(request: HttpRequest) -> str | None:
    """The address the sign-in attempt counts against (``AXES_CLIENT_IP_CALLABLE``).

    Each of ``settings.PROXY_COUNT`` reverse proxies appends the address it received the request from
    to ``X-Forwarded-For``, so the client's address is the ``PROXY_COUNT``-th entry from the right;
    anything left of it was sent by the client. Without that many entries, or with one that is not an
    IP address, the request did not come through the proxies and the connection's address counts.
    """
    remote = request.META.get("REMOTE_ADDR") or None
    if settings.PROXY_COUNT < 1:
        return remote
    header = request.META.get("HTTP_X_FORWARDED_FOR", "")
    forwarded = [entry.strip() for entry in header.split(",") if entry.strip()]
    if len(forwarded) < settings.PROXY_COUNT:
        return remote
    candidate = forwarded[-settings.PROXY_COUNT]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


class LoginThrottleBackend(AxesStandaloneBackend):
    """First authentication backend: refuses a locked-out account or address before any password is
    checked (axes' ``AxesStandaloneBackend``); a call without a request is left to the next backend.

    It has no ``get_user``, on purpose: ``Client.force_login`` and ``login()`` then record the backend
    that does load users (``ModelBackend``) in the session, never this one.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)

    async def aauthenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        return await sync_to_async(self.authenticate)(request, username, password, **kwargs)


class LoginAttemptHandler(AxesDatabaseHandler):
    """Axes' database handler, with a reset on success limited to the account from that address."""

    def reset_user_attempts(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        username = get_client_username(request, credentials)
        ip_address = request.axes_ip_address  # type: ignore[attr-defined]
        count, _ = AccessAttempt.objects.filter(username=username, ip_address=ip_address).delete()
        return int(count)


def login_locked_out_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """The sign-in page saying the account or the address is locked, and for how long (429)."""
    minutes = settings.LOGIN_LOCKOUT_MINUTES
    response = render(
        request,
        "registration/locked_out.html",
        {"minutes": minutes, "failure_limit": settings.LOGIN_FAILURE_LIMIT},
        status=429,
    )
    response["Retry-After"] = str(minutes * 60)
    return response
