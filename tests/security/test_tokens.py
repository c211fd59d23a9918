"""API tokens: created scoped to a project and a policy role, listed without their keys, rotated,
revoked and expiring — from the ``api_token`` command, checked against the real API."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from arg_platform.models import AuditEvent
from projects.models import ApiToken
from projects.services import api_token_create

pytestmark = pytest.mark.django_db


def _cli(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("api_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _whoami(key: str) -> tuple[int, dict]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.get("/api/v1/whoami/")
    return response.status_code, response.json()


def test_create_prints_the_key_once_scoped_to_project_and_role(world):
    out, err = _cli("create", "tiny", "mobile-app", "--role", "customer", "--expires-in-days", "30")
    key = out.strip()
    assert key.startswith("arg_") and len(out.splitlines()) == 1
    assert "mobile-app" in err and "role=customer" in err and "shown only now" in err
    token = ApiToken.objects.get(name="mobile-app")
    assert token.key_hash != key and key not in token.key_hash
    assert timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert _whoami(key) == (
        200,
        {"kind": "client", "name": "client:mobile-app", "project": "tiny", "role": "customer"},
    )
    listing, _ = _cli("list", "tiny")
    assert "mobile-app" in listing and "role=customer" in listing and key not in listing
    assert AuditEvent.objects.filter(
        object_type="api_token", action="create", object_key=token.prefix
    ).exists()


def test_a_client_token_reads_and_infers_but_never_curates(world):
    key = _cli("create", "tiny", "reader", "--role", "customer")[0].strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/projects/tiny/labels/").status_code == 200
    refused = client.post("/api/v1/projects/tiny/clusters/", {"key": "x1", "name": "X"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "your role (client) may not curate in this project"


def test_revoked_token_gets_401_at_once(world):
    key = _cli("create", "tiny", "to-revoke")[0].strip()
    assert _whoami(key)[0] == 200
    out, _ = _cli("revoke", "tiny", "to-revoke")
    assert out.startswith("revoked to-revoke")
    code, body = _whoami(key)
    assert code == 401
    assert body["detail"] == "invalid, revoked or expired token"
    with pytest.raises(CommandError, match="no live token 'to-revoke'"):
        _cli("revoke", "tiny", "to-revoke")


def test_expired_token_gets_401(world):
    token, key = api_token_create(
        project=world["project"], name="short-lived", expires_at=timezone.now() + timedelta(seconds=30)
    )
    assert _whoami(key)[0] == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _whoami(key)[0] == 401
    assert "short-lived" not in _cli("list", "tiny")[0]
    assert "short-lived" in _cli("list", "tiny", "--all")[0]


def test_rotate_without_grace_revokes_the_old_key(world):
    old_key = _cli("create", "tiny", "rotating", "--role", "customer")[0].strip()
    new_key, err = _cli("rotate", "tiny", "rotating")
    new_key = new_key.strip()
    assert new_key != old_key and "is revoked" in err
    assert _whoami(old_key)[0] == 401
    assert _whoami(new_key) == (
        200,
        {"kind": "client", "name": "client:rotating", "project": "tiny", "role": "customer"},
    )
    old = ApiToken.objects.get(name__startswith="rotating~")
    assert old.revoked_at is not None


def test_rotate_with_grace_keeps_the_old_key_until_it_ends(world):
    old_key = _cli("create", "tiny", "graceful")[0].strip()
    new_key = _cli("rotate", "tiny", "graceful", "--grace-minutes", "60")[0].strip()
    assert _whoami(old_key)[0] == 200 and _whoami(new_key)[0] == 200
    old = ApiToken.objects.get(name__startswith="graceful~")
    assert timedelta(minutes=59) < old.expires_at - timezone.now() <= timedelta(minutes=60)
    ApiToken.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _whoami(old_key)[0] == 401 and _whoami(new_key)[0] == 200


def test_cli_refusals_name_the_problem(world):
    with pytest.raises(CommandError, match="project 'nope' not found"):
        _cli("list", "nope")
    with pytest.raises(CommandError, match="has no policy role 'ghost'"):
        _cli("create", "tiny", "x", "--role", "ghost")
    _cli("create", "tiny", "dup")
    with pytest.raises(CommandError, match="already has a token named 'dup'"):
        _cli("create", "tiny", "dup")
    assert ApiToken.objects.filter(name="dup").count() == 1


def test_a_cached_token_is_refused_at_once_when_another_process_revokes_or_expires_it(world):
    """The per-process token cache keeps the joined row, never the verdict: a revocation or an expiry
    written straight to the database (as another worker would) applies to the very next request."""
    from projects.services import token_cache

    key = _cli("create", "tiny", "cached", "--role", "customer")[0].strip()
    assert _whoami(key)[0] == 200  # authenticated: the row is now in this process's cache
    token = ApiToken.objects.get(name="cached")
    assert token_cache.get(token.key_hash, 30) is not None
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _whoami(key)[0] == 401
    ApiToken.objects.filter(pk=token.pk).update(expires_at=None)
    assert _whoami(key)[0] == 200
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert _whoami(key)[0] == 401
    ApiToken.objects.filter(pk=token.pk).delete()
    assert _whoami(key)[0] == 401


def test_token_cache_can_be_switched_off(world, settings):
    from projects.services import token_cache

    settings.TOKEN_AUTH_CACHE_S = 0
    token_cache.clear()
    key = _cli("create", "tiny", "uncached", "--role", "customer")[0].strip()
    assert _whoami(key)[0] == 200
    assert token_cache.get(ApiToken.objects.get(name="uncached").key_hash, 30) is None


def test_a_personal_token_fails_at_once_when_its_person_is_deactivated_or_deleted(world):
    """A person's token is refused on the very next request after the person is switched inactive (as
    an admin in another process would), works again when reactivated, and goes with a deleted person."""
    from django.contrib.auth import get_user_model

    person = get_user_model().objects.create_user("leaver", password="pw-leaver-1234")
    token, key = api_token_create(project=world["project"], name="leaver-token", user=person)
    assert _whoami(key)[0] == 200  # the row is now in this process's token cache
    get_user_model().objects.filter(pk=person.pk).update(is_active=False)
    code, body = _whoami(key)
    assert code == 401 and body["detail"] == "invalid, revoked or expired token"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert (
        client.post("/api/v1/projects/tiny/clusters/", {"key": "x9", "name": "X"}, format="json").status_code
        == 401
    )
    get_user_model().objects.filter(pk=person.pk).update(is_active=True)
    assert _whoami(key)[0] == 200
    person.delete()
    assert _whoami(key)[0] == 401 and not ApiToken.objects.filter(pk=token.pk).exists()
