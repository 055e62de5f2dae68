"""The admin-znode soak (issue 12.2), short: seeded random admin writes made
straight to ZooKeeper (reassignments that move data, reorder replicas or
change the replication factor, decommissions, preferred elections, topic
creations and deletions, partition additions), kill -9 and restart of brokers
and of the controller, under an acks=-1 idempotent producer. Every znode is
acted on within its bound and every acknowledged record is read back.
tests/support/admin_soak.py is the engine; scripts/soak_admin.py runs it long.
"""

from __future__ import annotations

import pytest

from support.admin_soak import AdminSoak
from support.admin_soak_view import SoakFailure

SEED = 12
STEPS = 40


@pytest.mark.slow
def test_every_admin_znode_is_acted_on_promptly_through_kills(tmp_path):
    soak = AdminSoak(tmp_path, SEED, STEPS, rate_per_s=100)
    try:
        report = soak.run()
    except SoakFailure as failure:
        pytest.fail(f"{failure}\nreplay: .venv/bin/python scripts/soak_admin.py --seed {SEED} --steps {STEPS}"
                    f"  (failed at step {failure.step}); cluster logs in {tmp_path}", pytrace=False)
    print(report)
