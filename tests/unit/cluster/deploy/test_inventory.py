import pytest

from kafkactl.cluster.deploy.inventory import (
    BrokerHost, Connection, InventoryError, LogDir, ZooKeeperHost, load_inventory, parse_inventory,
)


def parse(text, readable=lambda path: True):
    return parse_inventory(text, "inventory.yml", readable)


def refusal(text, readable=lambda path: True):
    with pytest.raises(InventoryError) as caught:
        parse(text, readable)
    return caught.value


THREE_HOSTS = """
all:
  vars:
    ansible_user: kafka
    broker_config: {num.partitions: 6, auto.create.topics.enable: false}
    zookeeper_config: {tickTime: 2000, admin.enableServer: false}
  children:
    zookeeper:
      hosts:
        k1: {zookeeper_id: 1}
        k2: {zookeeper_id: 2}
        k3: {zookeeper_id: 3}
    brokers:
      hosts:
        k1: {ansible_host: 10.0.0.1, broker_id: 1, log_dirs: [{path: /data/ssd0, media: ssd}, {path: /data/hdd0}]}
        k2: {ansible_host: 10.0.0.2, broker_id: 2, log_dirs: [{path: /data/ssd0}]}
        k3: {ansible_host: 10.0.0.3, ansible_port: 2222, broker_id: 3, log_dirs: [{path: /data/ssd0}]}
"""


def test_a_valid_inventory_becomes_typed_hosts():
    inventory = parse(THREE_HOSTS)
    config = {"num.partitions": "6", "auto.create.topics.enable": "false"}
    zoo_cfg = {"tickTime": "2000", "admin.enableServer": "false"}
    assert inventory.brokers[0] == BrokerHost(
        "k1", Connection("10.0.0.1", 22, "kafka", None), 1, None,
        (LogDir("/data/ssd0", "ssd"), LogDir("/data/hdd0", "auto")), config)
    assert inventory.brokers[2].connection == Connection("10.0.0.3", 2222, "kafka", None)
    # A host in both groups is one machine: the ZooKeeper side connects the same way.
    assert inventory.zookeeper[0] == ZooKeeperHost("k1", Connection("10.0.0.1", 22, "kafka", None), 1, zoo_cfg)
    assert [z.zookeeper_id for z in inventory.zookeeper] == [1, 2, 3]
    assert inventory.connections() == {
        "k1": Connection("10.0.0.1", 22, "kafka", None), "k2": Connection("10.0.0.2", 22, "kafka", None),
        "k3": Connection("10.0.0.3", 2222, "kafka", None)}
    assert inventory.broker_config == config and inventory.zookeeper_config == zoo_cfg


def test_defaults_address_is_the_name_port_22_user_root_no_key_media_auto():
    inventory = parse("""
zookeeper: {hosts: {zk.example.com: {zookeeper_id: 1}}}
brokers: {hosts: {zk.example.com: {broker_id: 0, log_dirs: [{path: /var/lib/kafka}]}}}
""")
    broker = inventory.brokers[0]
    assert broker.connection == Connection("zk.example.com", 22, "root", None)
    assert broker.log_dirs == (LogDir("/var/lib/kafka", "auto"),)
    assert broker.broker_config == {} and inventory.zookeeper[0].zookeeper_config == {}


def test_a_key_file_is_expanded_and_checked_locally(monkeypatch):
    monkeypatch.setenv("HOME", "/home/op")
    checked = []
    inventory = parse("""
all: {vars: {ansible_ssh_private_key_file: ~/.ssh/kafka}}
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""", readable=lambda path: checked.append(path) or True)
    assert inventory.brokers[0].connection.key_file == "/home/op/.ssh/kafka"
    assert set(checked) == {"/home/op/.ssh/kafka"}


def test_ansibles_older_connection_spellings_are_read():
    inventory = parse("""
zookeeper: {hosts: {k1: {zookeeper_id: 1, ansible_ssh_host: 10.0.0.9, ansible_ssh_port: 2200,
                         ansible_ssh_user: ops, ansible_private_key_file: /keys/k1}}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""")
    assert inventory.zookeeper[0].connection == Connection("10.0.0.9", 2200, "ops", "/keys/k1")


def test_the_operators_own_variables_and_ansibles_are_left_alone():
    inventory = parse("""
all: {vars: {java_heap: 4g, ansible_become: true, ansible_python_interpreter: /usr/bin/python3}}
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], rack: 7}}}
""")
    assert inventory.brokers[0].rack == "7"


def test_a_hosts_own_broker_config_replaces_the_groups():
    inventory = parse("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers:
  vars: {broker_config: {num.partitions: 3, log.retention.hours: 24}}
  hosts:
    k1: {broker_id: 1, log_dirs: [{path: /d}], broker_config: {num.partitions: 6}}
    k2: {broker_id: 2, log_dirs: [{path: /d}]}
""")
    assert inventory.brokers[0].broker_config == {"num.partitions": "6"}
    assert inventory.brokers[1].broker_config == {"num.partitions": "3", "log.retention.hours": "24"}


def test_load_inventory_reads_the_file(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(THREE_HOSTS)
    assert [b.broker_id for b in load_inventory(str(path)).brokers] == [1, 2, 3]


# --- refusals, asserted word for word

def test_an_unreadable_file(tmp_path):
    with pytest.raises(InventoryError) as caught:
        load_inventory(str(tmp_path / "missing.yml"))
    assert str(caught.value) == f"{tmp_path}/missing.yml: cannot read the inventory: No such file or directory"


def test_not_yaml():
    assert str(refusal("all: [a\nb: c\n")).startswith("inventory.yml: not YAML (line 2, column ")


def test_a_missing_group_suggests_the_one_meant():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
broker: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""")
    assert str(error) == ("inventory.yml: group brokers: missing: the inventory needs groups 'zookeeper' and "
                          "'brokers' (is 'broker' meant to be 'brokers'?)")


def test_duplicate_broker_id():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers:
  hosts:
    k1: {broker_id: 1, log_dirs: [{path: /d}]}
    k2: {broker_id: 1, log_dirs: [{path: /d}]}
""")
    assert str(error) == "inventory.yml: host k2: broker_id: 1 is also the broker_id of k1"
    assert (error.where, error.field) == ("host k2", "broker_id")


def test_an_even_ensemble_says_why():
    error = refusal("""
zookeeper:
  hosts: {k1: {zookeeper_id: 1}, k2: {zookeeper_id: 2}, k3: {zookeeper_id: 3}, k4: {zookeeper_id: 4}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""")
    assert str(error) == ("inventory.yml: group zookeeper: hosts: 4 hosts form an even ensemble, which tolerates "
                          "1 failed host, as 3 would: use 3 or 5")


def test_two_zookeeper_hosts_tolerate_no_failure():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}, k2: {zookeeper_id: 2}}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""")
    assert str(error).endswith("2 hosts form an even ensemble, which tolerates 0 failed hosts, as 1 would: use 1 or 3")


def test_a_broker_without_log_dirs():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers: {hosts: {k1: {broker_id: 1}}}
""")
    assert str(error) == "inventory.yml: host k1: log_dirs: a broker needs at least one log dir"


def test_an_unknown_broker_config_key_suggests_the_closest():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers:
  vars: {broker_config: {log.retention.hour: 24}}
  hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}
""")
    assert str(error) == ("inventory.yml: group brokers: broker_config: unknown key 'log.retention.hour' "
                          "(did you mean 'log.retention.hours'?)")


def test_a_managed_broker_key_says_where_it_comes_from():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers:
  vars: {broker_config: {broker.id: 5}}
  hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}
""")
    assert str(error) == ("inventory.yml: group brokers: broker_config: broker.id is managed by kafkactl deploy "
                          "(set the host variable broker_id)")


def test_a_misspelt_host_variable_suggests_the_right_name():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1}}}
brokers: {hosts: {k1: {brokerid: 1, log_dirs: [{path: /d}]}}}
""")
    assert str(error) == "inventory.yml: host k1: brokerid: unknown variable (did you mean 'broker_id'?)"


# --- refusals: each names the host (or group) and the field

ONE_ZOOKEEPER = "zookeeper: {hosts: {k1: {zookeeper_id: 1}}}\n"


@pytest.mark.parametrize("text, where, field, words", [
    # the file and its groups
    ("[1, 2]\n", "", "", "expected a mapping"),
    (ONE_ZOOKEEPER, "group brokers", "", "missing"),
    (ONE_ZOOKEEPER + "brokers:\n", "group brokers", "hosts", "no hosts"),
    ("zookeeper:\nbrokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "hosts", "no hosts"),
    # addresses and connection
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}, kafka_2: {broker_id: 2, "
     "log_dirs: [{path: /d}]}}}\n", "host kafka_2", "ansible_host", "not a host name"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], ansible_host: 'a b'}}}\n",
     "host k1", "ansible_host", "not a host name"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], ansible_port: 70000}}}\n",
     "host k1", "ansible_port", "not a port"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], ansible_port: ssh}}}\n",
     "host k1", "ansible_port", "not a port"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], ansible_user: 'a b'}}}\n",
     "host k1", "ansible_user", "not a user name"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], ansible_host: a.example, "
     "ansible_ssh_host: b.example}}}\n", "host k1", "ansible_host", "set one"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}, k2: {broker_id: 2, "
     "log_dirs: [{path: /d}], ansible_host: k1}}}\n", "host k2", "ansible_host", "also host k1"),
    # ids
    ("zookeeper: {hosts: {k1: }}\nbrokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "host k1", "zookeeper_id", "not set"),
    ("zookeeper: {hosts: {k1: {zookeeper_id: 0}}}\nbrokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "host k1", "zookeeper_id", "out of range (1..255)"),
    ("zookeeper: {hosts: {k1: {zookeeper_id: 256}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n", "host k1", "zookeeper_id", "out of range"),
    ("zookeeper: {hosts: {k1: {zookeeper_id: '1'}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n", "host k1", "zookeeper_id", "not an integer"),
    ("zookeeper: {hosts: {k1: {zookeeper_id: 1}, k2: {zookeeper_id: 1}, k3: {zookeeper_id: 3}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n", "host k2", "zookeeper_id", "also"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {log_dirs: [{path: /d}]}}}\n", "host k1", "broker_id", "not set"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: -1, log_dirs: [{path: /d}]}}}\n",
     "host k1", "broker_id", "out of range"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: true, log_dirs: [{path: /d}]}}}\n",
     "host k1", "broker_id", "not an integer"),
    # racks
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, rack: a, log_dirs: [{path: /d}]}, k2: {broker_id: 2, "
     "log_dirs: [{path: /d}]}}}\n", "host k2", "rack", "set it on every broker or on none"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, rack: [a], log_dirs: [{path: /d}]}}}\n",
     "host k1", "rack", "not a rack name"),
    # log dirs
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: []}}}\n", "host k1", "log_dirs", "at least"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: /d}}}\n", "host k1", "log_dirs", "a list"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [/d]}}}\n", "host k1", "log_dirs[0]",
     "expected {path: ..., media: ssd|hdd|auto}"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: data}]}}}\n",
     "host k1", "log_dirs[0].path", "not absolute"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{media: ssd}]}}}\n",
     "host k1", "log_dirs[0].path", "missing"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /}]}}}\n",
     "host k1", "log_dirs[0].path", "/ cannot be a log dir"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: '/a,b'}]}}}\n",
     "host k1", "log_dirs[0].path", "comma"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /data/kafka/}]}}}\n",
     "host k1", "log_dirs[0].path", "not in normal form (write /data/kafka)"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d/../e}]}}}\n",
     "host k1", "log_dirs[0].path", "(write /e)"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}, {path: /d}]}}}\n",
     "host k1", "log_dirs[1].path", "/d is listed twice"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}, {path: /d/x}]}}}\n",
     "host k1", "log_dirs[1].path", "/d/x is inside /d"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d/x}, {path: /d}]}}}\n",
     "host k1", "log_dirs[1].path", "/d contains /d/x"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d, media: nvme}]}}}\n",
     "host k1", "log_dirs[0].media", "'nvme' is not one of ssd, hdd, auto"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d, medium: ssd}]}}}\n",
     "host k1", "log_dirs[0].medium", "did you mean 'media'?"),
    (ONE_ZOOKEEPER + "brokers:\n  vars: {log_dirs: [{path: d}]}\n  hosts: {k1: {broker_id: 1}}\n",
     "group brokers", "log_dirs[0].path", "not absolute"),
    # broker_config
    (ONE_ZOOKEEPER + "brokers: {vars: {broker_config: {log.retention.hours: soon}}, "
     "hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group brokers", "broker_config", "log.retention.hours: invalid value 'soon' (not an integer)"),
    (ONE_ZOOKEEPER + "brokers: {vars: {broker_config: {message.max.bytes: 200000000}}, "
     "hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group brokers", "broker_config", "larger than socket.request.max.bytes"),
    (ONE_ZOOKEEPER + "brokers: {vars: {broker_config: {num.partitions: [1, 2]}}, "
     "hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group brokers", "broker_config", "num.partitions: must be a string, number or boolean"),
    (ONE_ZOOKEEPER + "brokers: {vars: {broker_config: {num.partitions: }}, "
     "hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group brokers", "broker_config", "num.partitions: no value given"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], "
     "broker_config: {listeners: 'PLAINTEXT://:9093'}}}}\n", "host k1", "broker_config", "managed by kafkactl deploy"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}], broker_config: [a]}}}\n",
     "host k1", "broker_config", "must be a mapping"),
    # zookeeper_config
    ("zookeeper: {vars: {zookeeper_config: {tickTim: 2000}}, hosts: {k1: {zookeeper_id: 1}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "zookeeper_config", "unknown key 'tickTim' (did you mean 'tickTime'?)"),
    ("zookeeper: {vars: {zookeeper_config: {dataDir: /zk}}, hosts: {k1: {zookeeper_id: 1}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "zookeeper_config", "dataDir is managed by kafkactl deploy"),
    ("zookeeper: {vars: {zookeeper_config: {server.1: 'a:2888:3888'}}, hosts: {k1: {zookeeper_id: 1}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "zookeeper_config", "server.1 is managed by kafkactl deploy (the ensemble is the zookeeper group)"),
    ("zookeeper: {vars: {zookeeper_config: {admin.enableServer: 'off'}}, hosts: {k1: {zookeeper_id: 1}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "zookeeper_config", "admin.enableServer: invalid value 'off' (expected true or false)"),
    ("zookeeper: {vars: {zookeeper_config: {initLimit: 0}}, hosts: {k1: {zookeeper_id: 1}}}\n"
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group zookeeper", "zookeeper_config", "initLimit: invalid value 0 (must be > 0)"),
    # misspelt variables, wherever they are set
    ("all: {vars: {zookeeper_conifg: {}}}\n" + ONE_ZOOKEEPER +
     "brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}\n",
     "group all", "zookeeper_conifg", "did you mean 'zookeeper_config'?"),
    (ONE_ZOOKEEPER + "brokers: {hosts: {k1: {broker_id: 1, log_dir: [{path: /d}]}}}\n",
     "host k1", "log_dir", "did you mean 'log_dirs'?"),
])
def test_each_refusal_names_where_and_what(text, where, field, words):
    error = refusal(text)
    assert (error.where, error.field) == (where, field)
    assert words in error.problem
    assert str(error) == ": ".join(p for p in ("inventory.yml", where, field, error.problem) if p)
    assert "\n" not in str(error)


def test_a_key_file_that_is_not_here():
    error = refusal("""
zookeeper: {hosts: {k1: {zookeeper_id: 1, ansible_ssh_private_key_file: /keys/none}}}
brokers: {hosts: {k1: {broker_id: 1, log_dirs: [{path: /d}]}}}
""", readable=lambda path: False)
    assert str(error) == ("inventory.yml: host k1: ansible_ssh_private_key_file: /keys/none is not a readable "
                          "file here")
