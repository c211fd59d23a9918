"""``manage.py simulate_offline``: its per-kind table covers every planted defect's kind."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from tests.review.loop_fixtures import fresh_snapshots  # noqa: F401


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_snapshots")
def test_the_report_has_a_row_and_a_match_entry_for_every_planted_defect(settings):
    from bench.simulation.domain import DEFECTS

    settings.REVIEW_EMAIL = False
    settings.REVIEW_WEBHOOK_URL = ""
    out = StringIO()
    call_command("simulate_offline", seed=2, nights=1, requests=150, poison_episodes=5, stdout=out)
    text = out.getvalue()

    rows = {
        line.split()[0]: line.split()[1:]
        for line in text.splitlines()
        if re.fullmatch(r"[A-Z_]+\s+\d+(\s+\d+\.\d\d){2}(\s+\d+){3}", line.strip())
    }
    # every defect's kind has its row, with or without proposals (the lifecycle and consolidation
    # kinds among them: one simulated day proposes no OBSOLESCENCE and no consolidated NODE_ADD)
    assert {d.kind for d in DEFECTS} <= set(rows)
    assert rows["OBSOLESCENCE"][0] == "0" and rows["NODE_ADD"][0] == "0"
    [matched] = [line for line in text.splitlines() if line.startswith("defects matched: ")]
    assert set(json.loads(matched.removeprefix("defects matched: "))) == {d.key for d in DEFECTS}
    assert text.rstrip().splitlines()[-1].startswith("SUMMARY proposal_precision=")
