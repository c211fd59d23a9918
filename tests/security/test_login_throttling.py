"""Sign-in throttling, through the door an attacker uses: real POSTs to the sign-in form.

Failed sign-ins are counted per account and per client address; either count reaching
``LOGIN_FAILURE_LIMIT`` locks that account, or that address, for ``LOGIN_LOCKOUT_MINUTES``. Every
failure is recorded and listed in the Django admin, where staff unlock by deleting the attempt.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.contrib.auth import aauthenticate, authenticate, get_user_model
from django.core.management import call_command
from django.db.models import F
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "pw-Secret-123"  # make_user's
LOGIN = "/accounts/login/"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """These tests count attempts, a hundred of them; a slow hash would only cost time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def sign_in(username: str, password: str, address: str, **headers: Any) -> Any:
    """One POST of the sign-in form from ``address``, by a fresh browser."""
    return Client().post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **headers)


def signed_in(response: Any) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


def assert_locked(response: Any) -> None:
    minutes = settings.LOGIN_LOCKOUT_MINUTES
    assert response.status_code == 429
    assert response["Retry-After"] == str(minutes * 60)
    text = " ".join(response.content.decode().split())
    assert "Sign-in locked" in text
    assert f"this account or from your address: signing in is locked for {minutes} minutes" in text
    assert "_auth_user_id" not in response.client.session


def fail(username: str, address: str, times: int) -> None:
    for _ in range(times):
        response = sign_in(username, "wrong-password", address)
        assert response.status_code == 200  # the form again, with its error


def lock_out(username: str, address: str) -> None:
    """Fail up to the limit: the last failure answers the lock-out page already."""
    fail(username, address, settings.LOGIN_FAILURE_LIMIT - 1)
    assert_locked(sign_in(username, "wrong-password", address))


def test_an_account_is_locked_after_the_limit_whatever_the_address(make_user):
    alice = make_user("alice")
    make_user("bob")
    limit = settings.LOGIN_FAILURE_LIMIT
    for attempt in range(limit - 1):  # an attacker spreading the guesses over addresses
        assert sign_in("alice", "wrong-password", f"198.51.100.{attempt + 1}").status_code == 200

    locking = sign_in("alice", "wrong-password", "198.51.100.99")
    right_password = sign_in("alice", PASSWORD, "203.0.113.5")  # even the owner, from elsewhere

    assert_locked(locking)
    assert_locked(right_password)
    assert AccessFailureLog.objects.filter(username="alice").count() == limit
    assert not AccessAttempt.objects.filter(post_data__contains="wrong-password").exists()
    alice.refresh_from_db()
    assert alice.last_login is None
    assert signed_in(sign_in("bob", PASSWORD, "192.0.2.20"))  # another account, another address


def test_an_address_is_locked_after_the_limit_whatever_the_account(make_user):
    make_user("carol")
    limit = settings.LOGIN_FAILURE_LIMIT
    for attempt in range(limit):  # password spraying: one guess per account
        sign_in(f"user-{attempt}", "wrong-password", "198.51.100.7")

    assert_locked(sign_in("carol", PASSWORD, "198.51.100.7"))  # a real account, from that address
    assert signed_in(sign_in("carol", PASSWORD, "192.0.2.30"))  # the same account from elsewhere


def test_the_lock_ends_after_the_cool_off(make_user):
    make_user("dave")
    minutes = settings.LOGIN_LOCKOUT_MINUTES
    lock_out("dave", "198.51.100.8")

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=minutes - 1))
    assert_locked(sign_in("dave", PASSWORD, "198.51.100.8"))  # a minute before the end
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=2))  # two minutes on

    assert signed_in(sign_in("dave", PASSWORD, "198.51.100.8"))  # the refused attempt did not extend it


def test_a_successful_sign_in_resets_the_count_of_that_account_from_that_address(make_user):
    make_user("erin")
    limit = settings.LOGIN_FAILURE_LIMIT
    fail("erin", "192.0.2.40", limit - 1)  # typos
    assert signed_in(sign_in("erin", PASSWORD, "192.0.2.40"))
    assert not AccessAttempt.objects.filter(username="erin").exists()

    fail("erin", "192.0.2.40", limit - 1)  # as many typos again: still not locked
    assert signed_in(sign_in("erin", PASSWORD, "192.0.2.40"))

    lock_out("erin", "192.0.2.40")  # counted from zero again, up to the limit


def test_signing_in_to_ones_own_account_does_not_reset_guesses_at_others(make_user):
    make_user("mallory")
    make_user("victim")
    limit = settings.LOGIN_FAILURE_LIMIT
    for _ in range(limit - 1):
        sign_in("victim", "wrong-password", "198.51.100.66")
        assert signed_in(sign_in("mallory", PASSWORD, "198.51.100.66"))

    assert_locked(sign_in("victim", "wrong-password", "198.51.100.66"))
    assert_locked(sign_in("victim", PASSWORD, "192.0.2.66"))


def test_failed_sign_ins_are_listed_in_the_admin_for_staff_only(make_user):
    make_user("frank")
    fail("frank", "198.51.100.9", 2)
    root = get_user_model().objects.create_superuser("root", password=PASSWORD)
    staff = Client()
    staff.force_login(root)
    nobody = Client()
    nobody.force_login(make_user("grace"))

    for path in ("/admin/axes/accessfailurelog/", "/admin/axes/accessattempt/"):
        listed = staff.get(path)
        refused = nobody.get(path)

        assert listed.status_code == 200
        assert "frank" in listed.content.decode() and "198.51.100.9" in listed.content.decode()
        assert refused.status_code == 302 and refused["Location"].startswith("/admin/login/")


def test_staff_unlock_an_account_in_the_admin(make_user):
    make_user("heidi")
    lock_out("heidi", "198.51.100.10")
    assert_locked(sign_in("heidi", PASSWORD, "192.0.2.50"))
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("root", password=PASSWORD))
    attempt = AccessAttempt.objects.get(username="heidi")

    response = staff.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert signed_in(sign_in("heidi", PASSWORD, "192.0.2.50"))
    assert AccessFailureLog.objects.filter(username="heidi").count() == settings.LOGIN_FAILURE_LIMIT  # kept


def test_the_reset_command_unlocks_an_account(make_user):
    make_user("ivan")
    lock_out("ivan", "198.51.100.11")
    assert_locked(sign_in("ivan", PASSWORD, "192.0.2.60"))

    call_command("axes_reset_username", "ivan", stdout=None)

    assert signed_in(sign_in("ivan", PASSWORD, "192.0.2.60"))


def test_the_admin_sign_in_is_throttled_too(make_user):
    get_user_model().objects.create_superuser("judy", password=PASSWORD)
    fail_admin = [
        Client().post("/admin/login/", {"username": "judy", "password": "nope"}, REMOTE_ADDR="198.51.100.12")
        for _ in range(settings.LOGIN_FAILURE_LIMIT)
    ]

    assert [r.status_code for r in fail_admin][-1] == 429
    assert_locked(sign_in("judy", PASSWORD, "192.0.2.70"))


def test_forwarded_for_is_ignored_without_a_proxy(make_user):
    make_user("kim")
    for attempt in range(settings.LOGIN_FAILURE_LIMIT):  # a new "address" in the header each time
        sign_in(f"user-{attempt}", "wrong", "198.51.100.13", HTTP_X_FORWARDED_FOR=f"10.0.0.{attempt}")

    assert_locked(sign_in("kim", PASSWORD, "198.51.100.13", HTTP_X_FORWARDED_FOR="10.0.0.200"))


def test_behind_the_proxy_the_address_the_proxy_saw_counts(make_user, settings):
    settings.PROXY_COUNT = 1
    make_user("liam")
    proxy = "172.18.0.1"
    for attempt in range(settings.LOGIN_FAILURE_LIMIT):  # the client's own entries come first, ignored
        sign_in(f"user-{attempt}", "wrong", proxy, HTTP_X_FORWARDED_FOR=f"10.0.0.{attempt}, 198.51.100.14")

    assert_locked(sign_in("liam", PASSWORD, proxy, HTTP_X_FORWARDED_FOR="198.51.100.14"))
    assert signed_in(sign_in("liam", PASSWORD, proxy, HTTP_X_FORWARDED_FOR="192.0.2.80"))  # other clients
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.14"}


def test_a_malformed_forwarded_for_counts_against_the_connection(make_user, settings):
    settings.PROXY_COUNT = 1
    make_user("mia")

    assert sign_in("mia", "wrong", "172.18.0.1", HTTP_X_FORWARDED_FOR="not-an-address").status_code == 200
    assert sign_in("mia", "wrong", "172.18.0.1").status_code == 200

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"172.18.0.1"}


def test_sign_ins_without_a_request_and_api_tokens_are_not_throttled(make_user, project, token_client):
    nina = make_user("nina")
    lock_out("nina", "127.0.0.1")  # the test client's own address, and nina
    assert_locked(sign_in("nina", PASSWORD, "127.0.0.1"))

    assert authenticate(username="nina", password=PASSWORD) == nina  # no request: a shell, a script
    assert async_to_sync(aauthenticate)(username="nina", password=PASSWORD) == nina
    assert Client().login(username="nina", password=PASSWORD)
    session = Client()
    session.force_login(nina)
    assert session.get("/").status_code == 200
    assert token_client(project).get("/api/v1/whoami/").status_code == 200
