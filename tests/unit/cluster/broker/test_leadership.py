from kafkactl.cluster.broker.leadership import interim_leadership_claims
from kafkactl.cluster.broker.metadata import MetadataSnapshot, TopicMetadata
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment


def snapshot(states, live=(1, 2, 3), deleting=()):
    brokers = {b: BrokerRegistration(b, "h", 9000 + b, (f"PLAINTEXT://h:{9000 + b}",)) for b in live}
    assignment = TopicAssignment({0: [1, 2], 1: [2, 1]})
    return MetadataSnapshot(
        brokers=brokers,
        topics={"t": TopicMetadata("t", assignment, states)},
        deleting_topics=frozenset(deleting),
        controller_epoch=3,
    )


def test_first_replica_creates_missing_state():
    claims = interim_leadership_claims(snapshot({}), 1, set())
    assert [(c.partition, c.expected_zk_version) for c in claims] == [(0, None)]
    assert claims[0].state.leader == 1 and claims[0].state.isr == [1]
    assert claims[0].state.leader_epoch == 0 and claims[0].state.controller_epoch == 3


def test_takes_over_from_dead_leader_with_next_epoch_conditionally():
    dead = PartitionState(leader=4, leader_epoch=7, isr=[4], controller_epoch=1, zk_version=12)
    claims = interim_leadership_claims(snapshot({0: dead}), 1, set())
    assert claims[0].state.leader_epoch == 8 and claims[0].expected_zk_version == 12


def test_leaves_live_leader_alone_and_skips_led_partitions():
    other = PartitionState(leader=2, leader_epoch=1, isr=[2], controller_epoch=1, zk_version=1)
    assert interim_leadership_claims(snapshot({0: other}), 1, set()) == []
    mine = PartitionState(leader=1, leader_epoch=1, isr=[1], controller_epoch=1, zk_version=1)
    assert interim_leadership_claims(snapshot({0: mine}), 1, {("t", 0)}) == []
    # a restart: our own old leadership is renewed with a new epoch
    assert interim_leadership_claims(snapshot({0: mine}), 1, set())[0].state.leader_epoch == 2


def test_unregistered_broker_and_deleting_topics_claim_nothing():
    assert interim_leadership_claims(snapshot({}, live=(2, 3)), 1, set()) == []
    assert interim_leadership_claims(snapshot({}, deleting=("t",)), 1, set()) == []
