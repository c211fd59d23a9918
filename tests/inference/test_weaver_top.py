"""The weaver's top-k selection equals a stable descending sort, ties broken by index; a label the user
chose when asked "Do you mean X or Y?" replaces the weaver's choice, and the policy's gate still applies."""

from __future__ import annotations

import numpy as np

from inference.contracts import Flag, LexicalCandidates
from inference.steps.weaver import top_indices

AMBIGUOUS = "how do I set up single sign on"  # the demo asks: SSO & SAML login (L00028) or Set up 2FA
SSO = "L00028"


def test_top_indices_equal_the_stable_descending_sort_with_ties():
    rng = np.random.default_rng(3)
    for n in (5, 300, 5000):
        for k in (1, 5, 15, 600):
            tied = rng.integers(0, 12, n).astype(np.float32)  # many ties at the k-th value
            spread = rng.standard_normal(n).astype(np.float32)
            for values in (tied, spread):
                np.testing.assert_array_equal(top_indices(values, k), np.argsort(-values, kind="stable")[:k])


def test_top_indices_of_a_large_array_pick_the_best_first_and_the_lowest_index_on_a_tie():
    values = np.zeros(1000, dtype=np.float32)
    values[[700, 20, 999]] = 0.9
    values[500] = 1.0
    assert top_indices(values, 3).tolist() == [500, 20, 700]


def test_the_weaver_takes_the_chosen_label_and_the_gate_still_applies(demo_snapshot, demo, envelope_for):
    from inference.steps.policy_manager import precheck
    from inference.steps.weaver import weave, weaver_index_for

    index = weaver_index_for(demo_snapshot, demo)
    vector = demo.encoder.embed_one(AMBIGUOUS)
    lexical = LexicalCandidates(raw={}, filtered={}, blocked=())
    customer_decision = precheck(envelope_for(AMBIGUOUS, role="customer"), demo)
    unsure = weave(index=index, prompt_vec=vector, lexical=lexical, decision=customer_decision)
    assert Flag.ABSTAIN_RECOMMENDED in unsure.flags

    chosen = weave(index=index, prompt_vec=vector, lexical=lexical, decision=customer_decision, chosen=SSO)
    assert chosen.l_final == {SSO: 1.0} and chosen.confidence == 1.0
    assert not chosen.flags & {Flag.ABSTAIN_RECOMMENDED, Flag.LOW_MARGIN, Flag.OOD}
    assert chosen.top_k == unsure.top_k and chosen.classifier == unsure.classifier

    visitor = precheck(envelope_for(AMBIGUOUS, role="anonymous-visitor"), demo)
    gated = weave(index=index, prompt_vec=vector, lexical=lexical, decision=visitor, chosen=SSO)
    assert gated.l_final == {} and gated.policy_gated
