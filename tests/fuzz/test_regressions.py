"""Each server error the API fuzzer found, replayed as a plain request (they must stay 4xx)."""

from __future__ import annotations

import pytest

from taxonomy.models import LabelIncompatibility

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("raw_id", ["%C2%BD%C3%9A%C3%92%C3%B5A", "abc", "%C2%B2", "1e3", "-1"])
def test_deleting_an_incompatibility_by_a_non_numeric_id_is_a_404(project, expert, api_as, raw_id):
    # found by schemathesis (negative case): DELETE …/incompatibilities/½ÚÒõA…/ answered 500
    response = api_as(expert).delete(f"/api/v1/projects/{project.slug}/incompatibilities/{raw_id}/")
    assert response.status_code == 404
    assert response.json()["detail"].startswith("incompatibility ")
    assert LabelIncompatibility.objects.count() == 0


@pytest.mark.parametrize("field", ["max_age_days", "min_age_days"])
@pytest.mark.parametrize("value", ["-4.190883264559187e+16", "1e300", "-1"])
def test_proposal_age_filters_out_of_range_are_a_400(project, reviewer, api_as, field, value):
    # found by schemathesis (positive case): GET …/proposals/?max_age_days=-4.19e16 answered 500
    # (timedelta overflow)
    response = api_as(reviewer).get(f"/api/v1/projects/{project.slug}/proposals/", {field: value})
    assert response.status_code == 400
    assert field in response.json()


def test_proposal_age_filters_in_range_still_filter(project, reviewer, api_as):
    response = api_as(reviewer).get(
        f"/api/v1/projects/{project.slug}/proposals/", {"max_age_days": "30", "min_age_days": "0"}
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "12110835154279440931671549639598800896"},
        {"offset": "12110835154279440931671549639598800896"},
        {"limit": "99999999999999999999", "offset": "-3768626"},
    ],
)
def test_list_pagination_beyond_64_bits_is_bounded(project, expert, api_as, query):
    # found by schemathesis (negative case): GET …/audit/?limit=1.2e37 answered 500 (SQLite OverflowError)
    response = api_as(expert).get(f"/api/v1/projects/{project.slug}/audit/", query)
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_list_limit_and_offset_are_capped():
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from arg_platform.pagination import MAX_LIMIT, MAX_OFFSET, LimitOffsetPagination

    request = Request(APIRequestFactory().get("/", {"limit": "5000", "offset": str(10**30)}))
    paginator = LimitOffsetPagination()
    assert (
        (paginator.get_limit(request), paginator.get_offset(request))
        == (MAX_LIMIT, MAX_OFFSET)
        == (1000, 10**12)
    )


def test_graph_node_list_with_an_offset_beyond_64_bits_is_an_empty_page(project, expert, api_as):
    # found by schemathesis (positive case): GET …/nodes/?source=draft&offset=1.4e23 answered 500
    response = api_as(expert).get(
        f"/api/v1/projects/{project.slug}/nodes/", {"source": "draft", "offset": "139348117090764880609280"}
    )
    assert response.status_code == 200
    assert response.json()["results"] == []
