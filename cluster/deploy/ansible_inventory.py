"""Ansible's YAML inventory as Ansible reads it: groups, hosts and variables (pure).

The input is what `yaml.safe_load` returns for an inventory file; the result
is which hosts each group holds and which value every variable of a host
takes, with the place it was set (`Var.origin`), so an error can name it.

The format (Ansible's `yaml` inventory plugin):

- The top level maps group names to groups. `all` is the root: every other
  top-level group is a child of `all`, and every host is a member of it.
- A group is empty (no value) or a mapping with at most `hosts`, `vars` and
  `children`. `hosts` maps host names to their variables (or to nothing);
  `children` maps group names to groups, which may be given in full there or
  anywhere else in the file. Ansible only warns about other keys and skips
  them; here they are refused, since a misspelt `hosts` would silently drop
  the hosts it lists.
- A host may be listed in several groups, with its variables in any of those
  entries (for instance all of them under `all.hosts` and bare names in the
  groups): the entries are merged in the order of the file, later ones
  winning per variable. A group given in several places is merged the same
  way.
- A host belongs to a group when the group lists it or when one of the
  group's children, at any depth, does.

Precedence, as Ansible's: the variables of `all` first, then those of each
other group the host belongs to, in order of depth (a child group is one
deeper than its deepest parent), then `ansible_group_priority` (default 1),
then name; each overrides the ones before it; the host's own variables win
over every group. A variable is replaced whole: a dict set on a host
replaces the group's dict rather than merging with it (Ansible's default
`hash_behaviour = replace`).

Host ranges (`kafka[1:3].example.com`) are not supported and are refused.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALL = "all"
UNGROUPED = "ungrouped"
GROUP_KEYS = ("hosts", "vars", "children")
DEFAULT_GROUP_PRIORITY = 1


class AnsibleInventoryError(ValueError):
    """The file is not an inventory Ansible would read as meant.

    `where` is "group NAME" or "host NAME" (empty for the file as a whole)
    and `field` the key concerned; str() is the one line to print."""

    def __init__(self, where: str, field: str, problem: str):
        self.where, self.field, self.problem = where, field, problem
        super().__init__(": ".join(part for part in (where, field, problem) if part))


@dataclass(frozen=True, slots=True)
class Var:
    value: Any
    origin: str   # "host kafka-1", "group brokers" or "group all"


@dataclass(slots=True)
class _Group:
    name: str
    hosts: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AnsibleInventory:
    """Groups, their members and every host's variables, resolved."""

    # host name → its variables after precedence, with where each was set
    host_vars: Mapping[str, Mapping[str, Var]]
    # group name → its member hosts (its own and its children's), in file order
    members: Mapping[str, tuple[str, ...]]

    def group(self, name: str) -> tuple[str, ...]:
        return self.members.get(name, ())


def closest(name: str, candidates: Any, cutoff: float = 0.8) -> str | None:
    """The candidate `name` is most likely a misspelling of, if any."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(name: str, candidates: Any, cutoff: float = 0.6) -> str:
    match = closest(name, candidates, cutoff)
    return f" (did you mean {match!r}?)" if match else ""


def read_inventory(data: Any) -> AnsibleInventory:
    """Groups and host variables of a parsed YAML inventory; AnsibleInventoryError if malformed."""
    if data is None:
        raise AnsibleInventoryError("", "", "the file is empty")
    if not isinstance(data, Mapping):
        raise AnsibleInventoryError("", "", f"expected a mapping of group names, found {_kind(data)}")
    groups: dict[str, _Group] = {ALL: _Group(ALL)}
    host_entries: dict[str, dict[str, Any]] = {}
    for name, body in data.items():
        _read_group(_group_name(name, "the top level"), body, groups, host_entries)
        if name != ALL:
            _add_child(groups[ALL], name)
    _check_acyclic(groups)
    members = {name: _members(name, groups, {}) for name in groups}
    members[ALL] = tuple(host_entries)
    grouped = {host for name, hosts in members.items() if name != ALL for host in hosts}
    members.setdefault(UNGROUPED, tuple(h for h in host_entries if h not in grouped))
    depths = _depths(groups)
    host_vars = {host: _resolve(host, entries, groups, members, depths)
                 for host, entries in host_entries.items()}
    return AnsibleInventory(host_vars, members)


def _read_group(name: str, body: Any, groups: dict[str, _Group], host_entries: dict[str, dict[str, Any]]) -> None:
    group = groups.setdefault(name, _Group(name))
    where = f"group {name}"
    if body is None:
        return
    if not isinstance(body, Mapping):
        raise AnsibleInventoryError(where, "", f"expected a mapping with {', '.join(GROUP_KEYS)}, "
                                               f"found {_kind(body)}")
    for key in body:
        if key not in GROUP_KEYS:
            raise AnsibleInventoryError(where, str(key), f"not a group key: a group has only "
                                        f"{', '.join(GROUP_KEYS)}{did_you_mean(str(key), GROUP_KEYS)}")
    group.vars.update(_mapping(body.get("vars"), where, "vars"))
    for host, host_vars in _mapping(body.get("hosts"), where, "hosts").items():
        host = _host_name(host, where)
        if host not in group.hosts:
            group.hosts.append(host)
        host_entries.setdefault(host, {}).update(_mapping(host_vars, f"host {host}", ""))
    for child, child_body in _mapping(body.get("children"), where, "children").items():
        child = _group_name(child, where)
        if child == ALL:
            raise AnsibleInventoryError(where, "children", "'all' is the root group and cannot be a child")
        _add_child(group, child)
        _read_group(child, child_body, groups, host_entries)


def _add_child(group: _Group, child: str) -> None:
    if child not in group.children:
        group.children.append(child)


def _mapping(value: Any, where: str, field_name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        subject = "must be" if field_name else "its variables must be"
        hint = " (write `name:` per host, with its variables under it)" if field_name == "hosts" else ""
        raise AnsibleInventoryError(where, field_name, f"{subject} a mapping, found {_kind(value)}{hint}")
    for key in value:
        if not isinstance(key, str):
            raise AnsibleInventoryError(where, field_name, f"the key {key!r} is not a string")
    return value


def _group_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise AnsibleInventoryError(where, "", f"group name {name!r} is not a string")
    return name


def _host_name(name: str, where: str) -> str:
    if not name.strip():
        raise AnsibleInventoryError(where, "hosts", "a host name is empty")
    if "[" in name and ":" in name and "]" in name:
        raise AnsibleInventoryError(f"host {name}", "", "host ranges are not supported; list each host")
    return name


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    return {list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _check_acyclic(groups: dict[str, _Group]) -> None:
    # A cycle of children makes membership and depth undefined; Ansible refuses it too.
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name):] + [name]
            raise AnsibleInventoryError(f"group {name}", "children", "groups contain each other: "
                                        + " → ".join(cycle))
        state[name] = 1
        for child in groups[name].children:
            visit(child, path + [name])
        state[name] = 2

    for name in groups:
        visit(name, [])


def _members(name: str, groups: dict[str, _Group], memo: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    if name not in memo:
        found = list(groups[name].hosts)
        for child in groups[name].children:
            found += [h for h in _members(child, groups, memo) if h not in found]
        memo[name] = tuple(found)
    return memo[name]


def _depths(groups: dict[str, _Group]) -> dict[str, int]:
    # Ansible's depth: one more than the deepest parent; `all` is 0.
    depths = {ALL: 0}
    changed = True
    while changed:   # the graph is acyclic, so this settles within len(groups) rounds
        changed = False
        for group in groups.values():
            for child in group.children:
                depth = depths.get(group.name, 0) + 1
                if depths.get(child, -1) < depth:
                    depths[child] = depth
                    changed = True
    return depths


def _resolve(host: str, own: dict[str, Any], groups: dict[str, _Group],
             members: Mapping[str, tuple[str, ...]], depths: dict[str, int]) -> dict[str, Var]:
    mine = [g for g in groups.values() if g.name == ALL or host in members[g.name]]
    mine.sort(key=lambda g: (depths.get(g.name, 0), _priority(g), g.name))
    resolved: dict[str, Var] = {}
    for group in mine:
        # ansible_group_priority orders the group; Ansible does not pass it on to hosts.
        resolved.update({k: Var(v, f"group {group.name}") for k, v in group.vars.items()
                         if k != "ansible_group_priority"})
    resolved.update({k: Var(v, f"host {host}") for k, v in own.items()})
    return resolved


def _priority(group: _Group) -> int:
    value = group.vars.get("ansible_group_priority", DEFAULT_GROUP_PRIORITY)
    if isinstance(value, bool) or not isinstance(value, int):
        raise AnsibleInventoryError(f"group {group.name}", "ansible_group_priority",
                                    f"must be an integer, not {value!r}")
    return value
