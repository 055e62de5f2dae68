"""The Python API other tests use as a fixture: LocalCluster(dir).up/down/status."""

import os
from pathlib import Path

import pytest

from kafkactl.cluster.local import LocalCluster, ShapeMismatchError

HERE = Path(__file__).resolve().parent


@pytest.fixture
def fake_broker_path(monkeypatch):
    # Brokers are spawned with our environment; let them find the stand-in.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


def test_running_context_manager_and_broker_control(tmp_path, fake_broker_path):
    cluster = LocalCluster(tmp_path / "c", broker_module="fake_broker")
    with cluster.running(brokers=2, overrides={"num.partitions": "3"}, purge=True) as status:
        assert status.all_alive and [b.registered for b in status.brokers] == [True, True]
        assert status.zookeeper_connect == f"127.0.0.1:{status.zookeeper_port}"
        assert "num.partitions=3" in Path(status.broker(1).config_file).read_text()

        cluster.stop_broker(2)  # SIGTERM: the broker deregisters itself
        after_stop = cluster.status()
        assert (after_stop.broker(2).alive, after_stop.broker(2).registered) == (False, False)

        restarted = cluster.up()
        assert restarted.broker(2).alive and restarted.broker(2).port == status.broker(2).port
        assert restarted.broker(1).pid == status.broker(1).pid

        with pytest.raises(ShapeMismatchError):
            cluster.up(brokers=3)
    assert not (tmp_path / "c").exists()


def test_running_cleans_up_when_up_fails(tmp_path):
    cluster = LocalCluster(tmp_path / "c", broker_module="no_such_module_either")
    with pytest.raises(Exception, match="exited"):
        with cluster.running(brokers=1, timeout_s=20):
            pass
    status = cluster.status()
    assert not status.zookeeper_alive and not status.brokers[0].alive
