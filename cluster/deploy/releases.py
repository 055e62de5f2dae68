"""Which releases a host keeps: one rule for both tools.

`kafkactl deploy` decides from the host's facts (host_plan.py); the Ansible
role kafkactl_release runs this module on the host, with the new release's
own Python, after pointing `current` at it:

    python -m kafkactl.cluster.deploy.releases INSTALL_ROOT NEW PREVIOUS

which prints the JSON list of the releases to remove (PREVIOUS: where
`current` pointed before, "" when nowhere). The host's releases and the ones
in use are read as host_facts.py reads them.

Kept:
- the new release;
- every release a service definition names, or a running service's copy of
  one: removing it would break the service's next restart, or the service;
- the one before the new one (the previous `current`, or else the newest
  other complete release by version: release_order), so that a rolled-out upgrade can still go back
  (layout.KEPT_RELEASES counts these two).
Everything else under versions/ goes, incomplete releases included.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence

from kafkactl.cluster.deploy import host_facts


def releases_to_remove(installed: Mapping[str, bool], current: str | None, new: str,
                       in_use: Sequence[str]) -> tuple[str, ...]:
    """installed: release -> complete; current: where `current` pointed
    before the new release; in_use: releases services are defined with or run."""
    keep = {new, *in_use}
    previous = current if current and current != new else None
    if previous is None:
        others = sorted((name for name, complete in installed.items() if complete and name != new),
                        key=release_order)
        previous = others[-1] if others else None
    if previous:
        keep.add(previous)
    return tuple(sorted(name for name in installed if name not in keep))


def release_order(name: str) -> tuple:
    """A sort key of `<version>-<hash>`: the version's numbers compare as
    numbers ("0.10.0" after "0.9.2"), a pre-release's letters sort before
    its release ("0.10.0rc1" before "0.10.0"), and the name breaks ties."""
    version = name.rsplit("-", 1)[0]
    runs = [run for run in re.split(r"(\d+)|\.", version) if run]
    return tuple((2, int(run), "") if run.isdigit() else (0, 0, run) for run in runs) + ((1, 0, ""),), name


def on_host(install_root: str, new: str, previous: str) -> tuple[str, ...]:
    """The rule applied to the host's own files under install_root."""
    return releases_to_remove(host_facts.releases(install_root), previous or None, new,
                              host_facts.releases_in_use(install_root))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3 or not args[0].startswith("/") or not args[1]:
        sys.stderr.write("usage: python -m kafkactl.cluster.deploy.releases INSTALL_ROOT NEW PREVIOUS "
                         "(INSTALL_ROOT absolute, NEW not empty)\n")
        return 2
    print(json.dumps(list(on_host(*args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
