"""The human review queue (ARG §3.4 step D): reviewers' decisions, the review pages and the REST API."""
