"""The simulation's Admin API client: AlterPartitionReassignments (start,
new target, cancel), sent to the controller as the event the broker's
handler queues, and carried out as Controller._on_api_reassignment does.

The controller may be killed (kill -9) between any two of its ZooKeeper
writes (client.py), most often while it carries out such a request; a new
controller then takes over (runner.py). What the client may rely on,
checked once the cluster is healed:
- a request answered NONE: the partition ends on the target asked for (a
  cancel: on its original replicas), unless something later asked for
  another (another request on it, a new /admin/reassign_partitions listing
  it, its topic deleted);
- a request the controller died on (no answer): once its topic znode held
  the request (admin_requests.py: when it takes effect), the same; before,
  whatever the partition was doing goes on (not checked beyond the end
  checks: nothing stuck moving, every partition led with a full ISR).
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import admin_requests
from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.model import ReplicaAssignment, TopicPartition
from kafkactl.cluster.controller.testing import ControllerKilled
from kafkactl.cluster.zk import codecs, layout


@dataclass(frozen=True, slots=True)
class Expectation:
    """Where a partition must end, and since when."""
    replicas: tuple[int, ...]
    topic_id: str | None
    why: str


class ApiAdminActions:
    """The Admin API client's part of `Simulation` (a mixin: it shares its state)."""

    def api_reassign(self) -> None:
        """The client asks for a change of 1 or 2 partitions: mostly a
        cancel or a new target for a moving partition (one the admin znode
        lists, or its topic znode shows moving), else a new move."""
        topics = [t for t in self._live_topics() if not self.zk.get(layout.delete_topic(t))]
        brokers = [b.broker_id for b in self._registered_brokers()]
        if not topics or not brokers:
            return
        listed = set(self._admin_listing()[1])
        partitions = [TopicPartition(t, p) for t in topics for p in self.topic(t).partitions]
        moving = [tp for tp in partitions if tp in listed or self._moving_in_znode(tp)]
        chosen = set(self.rng.sample(moving, min(len(moving), self.rng.randint(1, 2)))) if moving else set()
        if not chosen or self.rng.random() < 0.3:
            chosen.add(self.rng.choice(partitions))
        targets: dict[TopicPartition, tuple[int, ...] | None] = {}
        for tp in sorted(chosen):
            if tp in moving and self.rng.random() < 0.6:
                targets[tp] = None
                self.count("api_cancel_of_admin_move" if tp in listed else "api_cancel_asked")
            else:
                targets[tp] = tuple(self.rng.sample(brokers, self.rng.randint(1, min(3, len(brokers)))))
        self.enqueue(ev.ApiPartitionReassignment(reply=self._api_answered, targets=tuple(targets.items())))

    def _api_answered(self, answer) -> None:
        self.count("api_reassignment_answered")

    def _moving_in_znode(self, tp: TopicPartition) -> bool:
        topic = self.topic(tp.topic)
        return tp.partition in topic.adding_replicas or tp.partition in topic.removing_replicas

    def _admin_listing(self) -> tuple[int | None, dict[TopicPartition, tuple[int, ...]]]:
        """(czxid, partitions) of /admin/reassign_partitions; (None, {}) if absent."""
        node = self.zk.get(layout.REASSIGN_PARTITIONS)
        if node is None:
            return None, {}
        return node.czxid, {TopicPartition(*k): tuple(v) for k, v in codecs.decode_reassignment(node.data).items()}

    # --- the controller's side (Controller._on_api_reassignment)

    def handle_api_reassignment(self, event: ev.ApiPartitionReassignment) -> None:
        ctx = self.ctx
        requests = dict(event.targets)
        results, starts, retargets = admin_requests.reassignment_requests(ctx, requests)
        for tp in requests:
            self.expected.pop(tp, None)          # superseded by this request, whatever becomes of it
        wanted = {tp: ctx.assignments[tp].original if target is None else tuple(target)
                  for tp, target in requests.items() if results[tp] == admin_requests.NONE}
        taken = {tp: {ReplicaAssignment.from_original_and_target(ctx.assignments[tp].original, target),
                      ReplicaAssignment(target)} for tp, target in wanted.items()}
        topic_ids = {tp: ctx.topic_ids.get(tp.topic) for tp in wanted}
        try:
            if wanted:
                self._execute(ctx, admin_requests.alter_reassignments(ctx, results, starts, retargets))
        except ControllerKilled:
            self.count("controller_killed_in_api_reassignment")
            for tp, target in wanted.items():
                if self._znode_entry(tp) in taken[tp]:
                    self.count("api_taken_before_kill")
                    self._expect(tp, target, topic_ids[tp], "its topic znode held it when the controller died")
                else:
                    self.count("api_not_taken_before_kill")
            raise
        answers = admin_requests.reassignment_results(self.ctx, results, starts, retargets)
        for tp, target in wanted.items():
            if answers[tp][0] == ErrorCode.none:
                self._expect(tp, target, topic_ids[tp], "answered NONE")
        event.reply(answers)

    def _znode_entry(self, tp: TopicPartition) -> ReplicaAssignment | None:
        if not self.zk.get(layout.topic(tp.topic)):
            return None
        topic = self.topic(tp.topic)
        if tp.partition not in topic.partitions:
            return None
        return ReplicaAssignment(tuple(topic.partitions[tp.partition]),
                                 tuple(topic.adding_replicas.get(tp.partition, ())),
                                 tuple(topic.removing_replicas.get(tp.partition, ())))

    def _expect(self, tp: TopicPartition, replicas: tuple[int, ...], topic_id: str | None, why: str) -> None:
        if tp in self._admin_listing()[1] and layout.REASSIGN_PARTITIONS in self.zk.unread_admin:
            # An older request the controller has not read yet lists it: read
            # after this one, it may win (as in Kafka); nothing to hold the
            # controller to.
            return
        self.expected[tp] = Expectation(replicas, topic_id, f"{why} at step {self.step_number}")

    # --- the checks

    def forget_requested(self, tps) -> None:
        """The admin tool asked for a move of `tps` (a later request wins)."""
        for tp in tps:
            self.expected.pop(tp, None)

    def forget_superseded(self) -> None:
        """After every step: expectations a deletion voids (the topic gone,
        going, or another under its name)."""
        for tp, expectation in list(self.expected.items()):
            if self.ctx.topic_ids.get(tp.topic) != expectation.topic_id or self.ctx.is_queued_for_deletion(tp.topic):
                del self.expected[tp]

    def check_api_outcomes(self) -> None:
        """Once healed (every move finished): each partition where the client was told."""
        for tp, expectation in sorted(self.expected.items()):
            assignment = self.ctx.assignments.get(tp)
            ended = assignment.replicas if assignment is not None else None
            if ended != expectation.replicas:
                self.fail(f"{tp} ended on {ended}, not {expectation.replicas} ({expectation.why})")
            self.count("api_expectation_checked")
