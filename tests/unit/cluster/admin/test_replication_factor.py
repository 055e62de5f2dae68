"""A topic's new replication factor as a minimal reassignment (pure): literal inputs, literal plans."""

import pytest

from kafkactl.cluster.admin.replication_factor import (
    ReplicationFactorError, changed_since, propose_replication_factor, replica_load,
)

NO_RACKS = {1: None, 2: None, 3: None}


def propose(current, factor, brokers=NO_RACKS, load=None, leaders=None):
    if load is None:   # only this topic in the cluster
        load = {}
        for replicas in current.values():
            for b in replicas:
                load[b] = load.get(b, 0) + 1
    return propose_replication_factor("t", current, factor, brokers, load, leaders)


# --- increasing

def test_increasing_keeps_every_replica_in_place_and_spreads_the_new_ones():
    # Equal brokers take turns after each partition's first replica: each ends with 2.
    assert propose({0: [1], 1: [2], 2: [3]}, 2) == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert propose({0: [1], 1: [2], 2: [3]}, 3) == {0: [1, 2, 3], 1: [2, 1, 3], 2: [3, 1, 2]}


def test_increasing_evens_out_the_brokers_over_many_partitions():
    current = {p: [1 + p % 3] for p in range(6)}
    plan = propose(current, 2)
    assert all(plan[p][0] == current[p][0] for p in range(6))          # leaders stay first
    assert [sum(r.count(b) for r in plan.values()) for b in (1, 2, 3)] == [4, 4, 4]


def test_new_replicas_go_to_the_least_loaded_brokers_of_the_cluster():
    brokers = {1: None, 2: None, 3: None, 4: None}
    # Broker 4 holds few replicas (other topics elsewhere): it takes the new
    # ones until it is no longer the least loaded; then the topic's own spread decides.
    assert propose({0: [1], 1: [2], 2: [3]}, 2, brokers, load={1: 5, 2: 5, 3: 5, 4: 2}) == \
        {0: [1, 4], 1: [2, 4], 2: [3, 4]}
    assert propose({0: [1], 1: [2], 2: [3]}, 2, brokers, load={1: 5, 2: 5, 3: 5, 4: 3}) == \
        {0: [1, 4], 1: [2, 4], 2: [3, 1]}


def test_a_new_replica_prefers_a_rack_the_partition_does_not_use_yet_over_a_lighter_broker():
    brokers = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    assert propose({0: [1]}, 2, brokers, load={1: 1, 2: 0, 3: 9, 4: 9, 5: 9}) == {0: [1, 3]}
    assert propose({0: [1]}, 3, brokers, load={1: 1, 2: 0, 3: 9, 4: 8, 5: 9}) == {0: [1, 4, 5]}
    # Every rack used: the least used rack, then the load.
    assert propose({0: [1, 3, 5]}, 4, brokers, load={1: 1, 2: 7, 3: 1, 4: 2, 5: 1}) == {0: [1, 3, 5, 4]}


# --- decreasing

def test_decreasing_removes_from_the_end_of_the_list_and_never_the_preferred_leader():
    assert propose({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, 2) == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert propose({0: [1, 2, 3]}, 1, load={1: 100, 2: 0, 3: 0}) == {0: [1]}


def test_decreasing_drops_a_replica_that_doubles_up_a_rack_first_then_the_most_loaded():
    racks = {1: "a", 2: "b", 3: "a"}
    assert propose({0: [1, 3, 2]}, 2, racks, load={1: 1, 2: 9, 3: 1}) == {0: [1, 2]}
    assert propose({0: [1, 2, 3]}, 2, load={1: 1, 2: 9, 3: 1}) == {0: [1, 3]}
    assert propose({0: [1, 2, 3, 4]}, 2, {1: "a", 2: "a", 3: "b", 4: "b"}, load={1: 1, 2: 1, 3: 1, 4: 1}) == \
        {0: [1, 3]}


def test_decreasing_keeps_the_current_leader_when_it_is_not_the_preferred_one():
    # Broker 3 leads (1 was down a while): dropping it would force an election.
    assert propose({0: [1, 2, 3]}, 2, leaders={0: 3}) == {0: [1, 3]}
    assert propose({0: [1, 2, 3]}, 2, {1: "a", 2: "b", 3: "a"}, leaders={0: 3}) == {0: [1, 3]}
    assert propose({0: [1, 2, 3]}, 2, leaders={0: 1}) == {0: [1, 2]}


def test_a_replica_on_a_broker_that_is_gone_is_dropped_first():
    assert propose({0: [1, 5, 2]}, 2) == {0: [1, 2]}


# --- nothing to do, and refusals

def test_partitions_at_the_factor_already_are_left_out_and_none_means_nothing_to_do():
    assert propose({0: [1, 2], 1: [2, 3]}, 2) == {}
    assert propose({0: [1, 2], 1: [2]}, 2) == {1: [2, 3]}


@pytest.mark.parametrize("current, factor, message", [
    ({0: [1]}, 0, "replication factor must be at least 1, not 0"),
    ({0: [1]}, 4, "replication factor: 4 larger than available brokers: 3"),
    ({0: [5]}, 2, "topic 't' partition 0 would keep its replica on broker 5, which is not registered"),
    ({0: [5, 1]}, 1, "topic 't' partition 0 would keep its replica on broker 5"),
])
def test_impossible_factors_are_refused_in_one_line(current, factor, message):
    with pytest.raises(ReplicationFactorError) as raised:
        propose(current, factor)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_same_input_gives_the_same_plan_and_is_not_changed():
    current = {0: [3, 1], 1: [1], 2: [2, 3, 1]}
    load = {1: 4, 2: 2, 3: 3}
    first = propose_replication_factor("t", current, 2, NO_RACKS, load)
    assert first == propose_replication_factor("t", current, 2, NO_RACKS, load)
    assert current == {0: [3, 1], 1: [1], 2: [2, 3, 1]} and load == {1: 4, 2: 2, 3: 3}
    assert first == {1: [1, 2], 2: [2, 3]}


# --- the inputs and the check through the Admin API

def test_replica_load_counts_every_replica_of_every_topic():
    assert replica_load([{0: [1, 2], 1: [2, 3]}, {0: [2]}, {}]) == {1: 1, 2: 3, 3: 1}
    assert replica_load([]) == {}


@pytest.mark.parametrize("now, change", [
    ({0: [1, 2], 1: [2]}, None),
    ({1: [2], 0: [1, 2]}, None),                       # the order partitions come in does not matter
    ({0: [2, 1], 1: [2]}, "topic 't' partition 0 has replicas [2, 1] now, [1, 2] when the plan was made"),
    ({0: [1, 2], 1: [2, 3]}, "topic 't' partition 1 has replicas [2, 3] now, [2] when the plan was made"),
    ({0: [1, 2], 1: [2], 2: [3]}, "topic 't' has 3 partitions now, 2 when the plan was made"),
    (None, "topic 't' was deleted"),
])
def test_changed_since_names_the_first_difference_in_one_line(now, change):
    assert changed_since("t", {0: [1, 2], 1: [2]}, now) == change
