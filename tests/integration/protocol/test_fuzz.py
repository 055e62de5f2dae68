"""A short seeded fuzz run in every `make test`: real clients' frames, mutated
(tests/support/frame_fuzz.py), sent to a live broker; after every batch the
broker is alive, answers, serves a kcat round trip over the fuzzed topic,
stays under an RSS bound and has logged no traceback. The long run is
scripts/fuzz_broker.py."""

from __future__ import annotations

import pytest

from support.broker_fuzz import FuzzRun, Target, capture_client_frames

SEED = 20261125
CASES = 1500
BATCH = 300
TOPIC = "fuzzed"


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    from kafkactl.cluster.local import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("fuzz") / "cluster")
    status = cluster.up(brokers=1, overrides={"auto.create.topics.enable": "true",
                                              "num.partitions": "1"})
    broker = status.broker(1)
    yield Target(broker.host, broker.port, broker.pid, broker.log_file)
    cluster.down()


def test_mutated_client_frames_never_stop_the_broker_nor_poison_the_topic(target):
    corpus = capture_client_frames({1: (target.host, target.port)}, TOPIC)
    kinds = {int.from_bytes(frame[:2], "big") for frame in corpus}
    assert {0, 1, 2, 3, 18} <= kinds, f"the clients' traffic lacks an API: {sorted(kinds)}"
    report = FuzzRun(target, corpus, SEED, TOPIC).run(cases=CASES, batch=BATCH)
    assert report.cases == CASES and report.checks == CASES // BATCH
    # the cases reached the broker's checks, not only the first one
    assert report.kinds.get("batch:", 0) > 50 and report.kinds.get("compact", 0) + report.kinds.get("array", 0) > 0
    print(f"fuzz: {report.cases} cases in {report.seconds:.1f} s ({report.cases_per_second:.0f}/s), "
          f"max RSS {report.max_rss_mb:.0f} MB, max threads {report.max_threads}, kinds {report.kinds}")
