"""The steps of the online pipeline (ARG §2), in the order ``inference.pipeline.run_inference`` runs them:

1. ``envelope`` — the request envelope: prompt normalized, context, role;
2. ``policy_manager`` — the policy first: access, content filter, sensitive topics, scope guard;
3. ``lexical`` — lexical-first label candidates;
4. ``weaver`` — the Context Weaver: taxonomy-validated labels of the prompt;
5. ``landing`` — the landing point in the graph;
6. ``scoring`` and ``traversal`` — bounded scored traversal to the target node (over ``graph_index``,
   the release graph's arrays);
7. the outcome of the target: ``info`` (an Info answer), ``memory`` (a memory read or write), an Action
   (``inference.actions``), or when nothing lands, ``fallback`` (refocus, ``clarification``, out of scope).
"""
