import pytest
import yaml

from kafkactl.cluster.deploy.ansible_inventory import AnsibleInventoryError, Var, read_inventory


def read(text):
    return read_inventory(yaml.safe_load(text))


def values(inventory, host):
    return {name: var.value for name, var in inventory.host_vars[host].items()}


# --- the shapes Ansible accepts

def test_groups_under_all_children():
    inventory = read("""
all:
  children:
    zookeeper:
      hosts: {a: {zookeeper_id: 1}}
    brokers:
      hosts: {a: {broker_id: 1}, b: {broker_id: 2}}
""")
    assert inventory.group("zookeeper") == ("a",)
    assert inventory.group("brokers") == ("a", "b")
    assert inventory.group("all") == ("a", "b")
    assert values(inventory, "a") == {"zookeeper_id": 1, "broker_id": 1}


def test_top_level_groups_are_children_of_all():
    inventory = read("""
all:
  vars: {ansible_user: kafka}
zookeeper:
  hosts: {a: }
brokers:
  hosts: {b: }
""")
    assert inventory.group("zookeeper") == ("a",) and inventory.group("brokers") == ("b",)
    assert inventory.host_vars["b"]["ansible_user"] == Var("kafka", "group all")


def test_hosts_declared_under_all_and_named_in_groups():
    inventory = read("""
all:
  hosts:
    a: {ansible_host: 10.0.0.1, broker_id: 1}
    b: {ansible_host: 10.0.0.2, broker_id: 2}
  children:
    brokers:
      hosts: {a: , b: }
""")
    assert inventory.group("brokers") == ("a", "b")
    assert values(inventory, "b") == {"ansible_host": "10.0.0.2", "broker_id": 2}


def test_a_host_listed_twice_merges_its_variables_later_ones_winning():
    inventory = read("""
zookeeper:
  hosts: {a: {zookeeper_id: 1, rack: r1}}
brokers:
  hosts: {a: {broker_id: 7, rack: r2}}
""")
    assert values(inventory, "a") == {"zookeeper_id": 1, "broker_id": 7, "rack": "r2"}


def test_a_host_of_a_child_group_is_a_member_of_the_parent():
    inventory = read("""
all:
  children:
    brokers:
      children:
        rack_a:
          hosts: {a: }
          vars: {rack: a}
        rack_b:
          hosts: {b: }
          vars: {rack: b}
""")
    assert inventory.group("brokers") == ("a", "b")
    assert inventory.host_vars["b"]["rack"] == Var("b", "group rack_b")


def test_a_group_given_in_two_places_is_merged():
    inventory = read("""
all:
  children:
    brokers:
      hosts: {a: }
brokers:
  hosts: {b: }
  vars: {x: 1}
""")
    assert inventory.group("brokers") == ("a", "b")
    assert values(inventory, "a") == {"x": 1}


def test_empty_groups_and_hosts_without_variables():
    inventory = read("""
zookeeper:
brokers:
  hosts:
    a:
""")
    assert inventory.group("zookeeper") == () and inventory.group("brokers") == ("a",)
    assert values(inventory, "a") == {}


# --- precedence: all < parent group < child group (then priority, then name) < host

def test_host_beats_child_group_beats_all():
    inventory = read("""
all:
  vars: {v: all, w: all, x: all}
  children:
    brokers:
      vars: {w: brokers, x: brokers}
      hosts:
        a: {x: host}
""")
    assert inventory.host_vars["a"] == {"v": Var("all", "group all"), "w": Var("brokers", "group brokers"),
                                        "x": Var("host", "host a")}


def test_a_deeper_group_beats_its_parent_whatever_the_names():
    inventory = read("""
all:
  children:
    zz_parent:
      vars: {v: parent}
      children:
        aa_child:
          vars: {v: child}
          hosts: {a: }
""")
    assert inventory.host_vars["a"]["v"] == Var("child", "group aa_child")


def test_groups_at_one_depth_apply_in_name_order_so_the_later_name_wins():
    inventory = read("""
zookeeper:
  vars: {v: zookeeper}
  hosts: {a: }
brokers:
  vars: {v: brokers}
  hosts: {a: }
""")
    assert inventory.host_vars["a"]["v"] == Var("zookeeper", "group zookeeper")


def test_ansible_group_priority_orders_groups_of_one_depth():
    inventory = read("""
zookeeper:
  vars: {v: zookeeper}
  hosts: {a: }
brokers:
  vars: {v: brokers, ansible_group_priority: 10}
  hosts: {a: }
""")
    assert inventory.host_vars["a"]["v"] == Var("brokers", "group brokers")


def test_a_dict_variable_is_replaced_whole_not_merged():
    inventory = read("""
all:
  vars:
    broker_config: {num.partitions: 3, log.retention.hours: 24}
  children:
    brokers:
      hosts:
        a: {broker_config: {num.partitions: 6}}
""")
    assert values(inventory, "a")["broker_config"] == {"num.partitions": 6}


# --- refusals

@pytest.mark.parametrize("text, message", [
    ("", "the file is empty"),
    ("- a\n- b\n", "expected a mapping of group names, found a list"),
    ("brokers: [a, b]\n", "group brokers: expected a mapping with hosts, vars, children, found a list"),
    ("brokers:\n  hots: {a: }\n",
     "group brokers: hots: not a group key: a group has only hosts, vars, children (did you mean 'hosts'?)"),
    ("brokers:\n  hosts: [a, b]\n",
     "group brokers: hosts: must be a mapping, found a list (write `name:` per host, with its variables under it)"),
    ("brokers:\n  hosts: {a: [1]}\n", "host a: its variables must be a mapping, found a list"),
    ("brokers:\n  hosts: {'kafka[1:3]': }\n", "host kafka[1:3]: host ranges are not supported; list each host"),
    ("brokers:\n  vars: {ansible_group_priority: high}\n  hosts: {a: }\n",
     "group brokers: ansible_group_priority: must be an integer, not 'high'"),
    ("x:\n  children: {all: }\n", "group x: children: 'all' is the root group and cannot be a child"),
])
def test_malformed_inventories_are_refused_in_one_line(text, message):
    with pytest.raises(AnsibleInventoryError) as caught:
        read(text)
    assert str(caught.value) == message


def test_groups_that_contain_each_other_are_refused():
    with pytest.raises(AnsibleInventoryError) as caught:
        read("""
a:
  children: {b: }
b:
  children: {a: }
""")
    assert str(caught.value).endswith("groups contain each other: a → b → a")
