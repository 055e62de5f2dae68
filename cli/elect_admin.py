"""`kafkactl elect` through the Admin API: ElectLeaders, then Metadata for the outcome.

The same classification as through ZooKeeper decides which partitions are
asked for (cluster/admin/election.py); the controller's per-partition answer
then says what it did: ELECTION_NOT_NEEDED and the errors for partitions it
could not elect (PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE)
become "not needed" and "failed" with Kafka's error as the reason. Leaders
and epochs before and after come from Metadata, waited for until the new
leaders show there (bounded by --timeout, default 60 s).
"""

from __future__ import annotations

import time

import typer

from kafkactl.cli.common import timeout_s

ELECTION_TIMEOUT_S = 60.0
_TYPES = {"preferred": 0, "unclean": 1}       # ElectLeaders election_type


def elect(ctx: typer.Context, backend, kind: str, asked: list, views: dict, live: set[int], no_wait: bool) -> list:
    """Outcomes of the partitions asked for, as cli/elect.py reports them."""
    from kafkactl.cluster.admin import election

    obstacle, achieved = _rules(kind)
    eligible, outcomes = election.split(views, asked, live, obstacle)
    if not eligible:
        return outcomes
    answers = backend.elect(_TYPES[kind], eligible)
    refused = {tp: answers[tp] for tp in eligible if tp in answers and answers[tp].error is not None}
    outcomes += [_refused(views[tp], outcome) for tp, outcome in refused.items()]
    accepted = [tp for tp in eligible if tp not in refused]
    if no_wait:
        return outcomes + [election.Outcome(*tp, election.REQUESTED, views[tp].leader, -1, -1) for tp in accepted]
    after = _wait(ctx, backend, accepted, achieved)
    return outcomes + election.results(views, after, accepted, {b.broker_id for b in backend.brokers()}, obstacle,
                                       achieved)


def _rules(kind: str):
    from kafkactl.cluster.admin import election

    if kind == "preferred":
        return election.preferred_obstacle, election.preferred_achieved
    return election.unclean_obstacle, election.unclean_achieved


def _refused(view, outcome):
    from kafkactl.cluster.admin import election

    status = election.NOT_NEEDED if outcome.error == "election_not_needed" else election.FAILED
    reason = outcome.error.upper() + (f": {outcome.message}" if outcome.message else "")
    return election.Outcome(view.topic, view.partition, status, view.leader, view.leader, view.leader_epoch, reason)


def _wait(ctx: typer.Context, backend, accepted: list, achieved) -> dict:
    """Metadata's views of `accepted` once every one is achieved, or at the deadline."""
    from kafkactl.cluster.admin import election
    from kafkactl.cluster.admin import reassignment as ra

    deadline = time.monotonic() + timeout_s(ctx, ELECTION_TIMEOUT_S)
    topics = sorted({t for t, _ in accepted})
    seen: dict = {}

    def done() -> bool:
        seen.clear()
        seen.update(ra.flatten(backend.partition_views(topics)))
        live = {b.broker_id for b in backend.brokers()}
        return all(tp in seen and achieved(seen[tp], live) for tp in accepted)

    election.wait_for(done, deadline)
    return dict(seen)
