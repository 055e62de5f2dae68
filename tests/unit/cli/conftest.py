import pytest


@pytest.fixture(autouse=True)
def isolated_user_files(tmp_path, monkeypatch):
    """Never read or write the real user's config or state dir."""
    monkeypatch.setenv("KAFKACTL_CONFIG", str(tmp_path / "home" / "config.json"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / "state"))
    monkeypatch.delenv("KAFKACTL_ZOOKEEPER", raising=False)
    monkeypatch.delenv("KAFKACTL_BROKER_MODULE", raising=False)


@pytest.fixture
def fake_zookeeper(monkeypatch):
    """Commands talk to an in-memory ZooKeeper (support/fake_zookeeper.py) instead of a real one."""
    from support.fake_zookeeper import FakeZooKeeper

    from kafkactl.cli import common

    zookeeper = FakeZooKeeper()
    monkeypatch.setattr(common, "connect_zookeeper", lambda address, timeout_s: zookeeper)
    monkeypatch.setenv("KAFKACTL_ZOOKEEPER", "fake:2181")
    return zookeeper
