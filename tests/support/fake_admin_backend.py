"""An AdminApiBackend whose cluster is given in the test: the replicas Metadata
shows, what ListPartitionReassignments lists and how the controller answers
AlterPartitionReassignments, and the configs IncrementalAlterConfigs changes."""

from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin import configs
from kafkactl.cluster.admin.admin_backend import AdminApiBackend
from kafkactl.cluster.admin.admin_client import AdminApiError
from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.zk.codecs import BrokerRegistration


class FakeAdminBackend(AdminApiBackend):
    """AdminApiBackend's own partition views over Metadata's replicas (no
    adding/removing) and the controller's answers, both given here; configs
    are each entity's overrides in `stored`, changed by IncrementalAlterConfigs'
    SET and DELETE as the brokers apply them. `calls` records the changes in order."""

    def __init__(self, replicas: dict, ongoing: dict, refused: dict | None = None, stored: dict | None = None,
                 live=(1, 2, 3, 4), failing: str | None = None):
        self.replicas, self.ongoing, self.refused = replicas, ongoing, refused or {}
        self.stored = {e: dict(c) for e, c in (stored or {}).items()}
        self.live, self.failing = live, failing
        self.asked = None
        self.calls = []

    def topic_names(self):
        return sorted({t for t, _ in self.replicas})

    def describe_topics(self, names):
        """Metadata's answer: leader the first replica, all in the ISR; None for a topic not in `replicas`."""
        return {t: [PartitionInfo(t, p, list(r), r[0], 0, list(r)) for (tt, p), r in sorted(self.replicas.items())
                    if tt == t] or None for t in names}

    def list_reassignments(self):
        return self.ongoing

    def alter_reassignments(self, targets):
        self.asked = dict(targets)
        self.calls.append(("AlterPartitionReassignments", sorted(targets)))
        return {tp: self.refused.get(tp, ap.Outcome(None)) for tp in targets}

    def brokers(self):
        return [BrokerRegistration(b, "h", 9000 + b, (f"h:{9000 + b}",)) for b in self.live]

    def config_overrides(self, entities):
        assert all(e.entity_type == configs.TOPICS or int(e.name) in self.live for e in entities), entities
        return {e: dict(self.stored.get(e, {})) for e in entities}

    def alter_entity(self, entity, add, delete):
        if entity.entity_path == self.failing:
            raise AdminApiError(f"broker {entity.name} did not answer: timed out")
        self.calls.append(("IncrementalAlterConfigs", entity.entity_path, dict(add), list(delete)))
        config = {k: v for k, v in self.stored.get(entity, {}).items() if k not in delete}
        self.stored[entity] = {**config, **add}
