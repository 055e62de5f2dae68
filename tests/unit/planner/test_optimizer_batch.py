"""The optimizer's batch of candidates per selection and round."""

from kafkactl.planner.optimizer import BATCH_MAX, BATCH_MIN, batch_size


def test_the_batch_is_a_share_of_the_replicas_within_its_bounds():
    assert batch_size(0) == batch_size(30_000) == BATCH_MIN         # small clusters: the floor
    assert batch_size(1_000_002) == 125_000                         # one replica in 8
    assert batch_size(10_000_000) == BATCH_MAX                      # the driver's bound
    sizes = [batch_size(n) for n in range(0, 3_000_000, 50_000)]
    assert sizes == sorted(sizes)
