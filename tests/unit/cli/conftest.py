import pytest


@pytest.fixture(autouse=True)
def isolated_user_files(tmp_path, monkeypatch):
    """Never read or write the real user's config or state dir."""
    monkeypatch.setenv("KAFKACTL_CONFIG", str(tmp_path / "home" / "config.json"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / "state"))
    monkeypatch.delenv("KAFKACTL_ZOOKEEPER", raising=False)
    monkeypatch.delenv("KAFKACTL_BROKER_MODULE", raising=False)
