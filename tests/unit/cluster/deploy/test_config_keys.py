import pytest

from kafkactl.cluster.deploy.config_keys import (
    broker_key_problem, broker_values_problem, property_value, zookeeper_key_problem, zookeeper_value,
)


@pytest.mark.parametrize("value, written", [
    (True, "true"), (False, "false"), (3, "3"), (0.5, "0.5"), ("PLAINTEXT", "PLAINTEXT"),
])
def test_yaml_scalars_are_written_as_kafka_reads_them(value, written):
    assert property_value(value) == written


def test_keys_kafka_accepts_without_acting_on_them_are_allowed():
    assert broker_key_problem("num.io.threads") is None
    assert broker_key_problem("log.retention.hours") is None


@pytest.mark.parametrize("key", ["broker.id", "log.dirs", "log.dir", "log.dir.media", "broker.rack",
                                 "zookeeper.connect", "listeners", "advertised.listeners",
                                 "listener.security.protocol.map", "inter.broker.listener.name"])
def test_keys_the_deploy_writes_are_refused_as_managed(key):
    assert broker_key_problem(key).startswith(f"{key} is managed by kafkactl deploy (")


def test_an_unknown_key_far_from_any_known_one_gets_no_suggestion():
    assert broker_key_problem("frobnicate") == "unknown key 'frobnicate'"


def test_broker_values_are_checked_by_the_brokers_own_parser():
    assert broker_values_problem({"num.partitions": "0"}, 1, ["/d"]) == "num.partitions: invalid value '0' (must be >= 1)"
    assert broker_values_problem({"num.partitions": "3"}, 1, ["/d"]) is None


@pytest.mark.parametrize("key", ["dataDir", "dataLogDir", "clientPort", "clientPortAddress", "server.3", "group.1",
                                 "weight.2", "dynamicConfigFile", "reconfigEnabled", "standaloneEnabled", "peerType"])
def test_zookeeper_keys_the_deploy_writes_are_refused_as_managed(key):
    assert "managed by kafkactl deploy" in zookeeper_key_problem(key)


@pytest.mark.parametrize("key", ["tickTime", "4lw.commands.whitelist", "autopurge.purgeInterval",
                                 "ssl.keyStore.location", "authProvider.1", "metricsProvider.httpPort"])
def test_zookeepers_own_keys_and_key_families_are_allowed(key):
    assert zookeeper_key_problem(key) is None


def test_a_bare_family_prefix_is_not_a_key():
    assert zookeeper_key_problem("ssl.") is not None


@pytest.mark.parametrize("key, value, written", [
    ("tickTime", 2000, "2000"), ("tickTime", "2000", "2000"),
    ("admin.enableServer", False, "false"), ("admin.enableServer", "True", "true"),
    # YAML reads an unquoted yes as true; ZooKeeper compares skipACL with "yes".
    ("skipACL", True, "yes"), ("forceSync", "no", "no"),
    ("4lw.commands.whitelist", "ruok,srvr", "ruok,srvr"),
])
def test_zookeeper_values_are_written_as_zookeeper_compares_them(key, value, written):
    assert zookeeper_value(key, value) == written


@pytest.mark.parametrize("key, value, problem", [
    ("tickTime", "2s", "invalid value '2s' (not an integer)"),
    ("syncLimit", -1, "invalid value -1 (must be > 0)"),
    ("admin.serverPort", 0, "invalid value 0 (not a port: 1..65535)"),
    ("maxClientCnxns", True, "invalid value True (not an integer)"),
    ("localSessionsEnabled", "yes", "invalid value 'yes' (expected true or false)"),
    ("skipACL", "true", "invalid value 'true' (expected yes or no)"),
])
def test_zookeeper_values_it_would_misread_are_refused(key, value, problem):
    with pytest.raises(ValueError) as caught:
        zookeeper_value(key, value)
    assert str(caught.value) == problem
