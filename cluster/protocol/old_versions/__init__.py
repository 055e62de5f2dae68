"""Request versions Kafka 2.8 serves that kio, generated from Kafka 4.x, lacks.

Tools of the ZooKeeper era still send them (docs/architecture.md, "Old
request versions", has the audit). Written in kio's conventions (frozen
dataclasses with a `kafka_type` per field, field order wire order, and kio's
class attributes `__type__`, `__version__`, `__flexible__`, `__api_key__`
and `__header_schema__`, set by the bases of protocol/kio_entity.py from the
API version each class names), so kio's reader and writer serialize them
like its own classes and protocol/bounds.py checks their lengths like any
other request. One module
per API version, as in kio, because handlers look nested classes up by name
in the response class's module (protocol/build.py).

| API                  | key | versions | served or refused                                                 |
|----------------------|-----|----------|-------------------------------------------------------------------|
| Produce              | 0   | 0-2      | read to answer UNSUPPORTED_VERSION per partition (magic 0/1 input)  |
| Fetch                | 1   | 0-3      | read to answer UNSUPPORTED_VERSION per partition (no down-conversion) |
| ListOffsets          | 2   | 0        | served: a list of offsets per partition                           |
| CreateTopics         | 19  | 0-1      | served: v0 without validate_only; no throttle time before v2      |
| DeleteTopics         | 20  | 0        | served: kio's v1 request; no throttle time in the answer          |
| OffsetForLeaderEpoch | 23  | 0-1      | served: no current leader epoch; v1 answers the epoch              |
| DescribeConfigs      | 32  | 0        | served: `is_default` instead of the config source                  |
| AlterReplicaLogDirs  | 34  | 0        | served: kio's v1 classes (v1 only changed when throttling happens) |
| DescribeLogDirs      | 35  | 0        | served: kio's v1 classes (likewise)                                |

Where Kafka's schema says a version "is the same as" an older one, the
older one's classes are used for it: their wire layout is that version's.
"""

from kio.schema.alter_replica_log_dirs.v1 import request as alter_replica_log_dirs_v1_request
from kio.schema.alter_replica_log_dirs.v1 import response as alter_replica_log_dirs_v1_response
from kio.schema.create_topics.v2 import request as create_topics_v2_request
from kio.schema.delete_topics.v1 import request as delete_topics_v1_request
from kio.schema.describe_log_dirs.v1 import request as describe_log_dirs_v1_request
from kio.schema.describe_log_dirs.v1 import response as describe_log_dirs_v1_response

from kafkactl.cluster.protocol.old_versions import (
    create_topics_v0,
    create_topics_v1,
    delete_topics_v0,
    describe_configs_v0,
    fetch_v0,
    fetch_v1,
    fetch_v3,
    list_offsets_v0,
    offset_for_leader_epoch_v0,
    offset_for_leader_epoch_v1,
    produce_v0,
    produce_v1,
    produce_v2,
)

_REQUESTS = {
    (0, 0): produce_v0.ProduceRequest,   # v1 and v2 are the same as v0
    (0, 1): produce_v0.ProduceRequest,
    (0, 2): produce_v0.ProduceRequest,
    (1, 0): fetch_v0.FetchRequest,       # v1 and v2 are the same as v0
    (1, 1): fetch_v0.FetchRequest,
    (1, 2): fetch_v0.FetchRequest,
    (1, 3): fetch_v3.FetchRequest,
    (2, 0): list_offsets_v0.ListOffsetsRequest,
    (19, 0): create_topics_v0.CreateTopicsRequest,
    (19, 1): create_topics_v2_request.CreateTopicsRequest,   # v2 is the same as v1
    (20, 0): delete_topics_v1_request.DeleteTopicsRequest,   # v0-v3 are the same
    (23, 0): offset_for_leader_epoch_v0.OffsetForLeaderEpochRequest,   # v1 is the same as v0
    (23, 1): offset_for_leader_epoch_v0.OffsetForLeaderEpochRequest,
    (32, 0): describe_configs_v0.DescribeConfigsRequest,
    (34, 0): alter_replica_log_dirs_v1_request.AlterReplicaLogDirsRequest,
    (35, 0): describe_log_dirs_v1_request.DescribeLogDirsRequest,
}

_RESPONSES = {
    (0, 0): produce_v0.ProduceResponse,
    (0, 1): produce_v1.ProduceResponse,
    (0, 2): produce_v2.ProduceResponse,
    (1, 0): fetch_v0.FetchResponse,
    (1, 1): fetch_v1.FetchResponse,      # v2 and v3 are the same as v1
    (1, 2): fetch_v1.FetchResponse,
    (1, 3): fetch_v1.FetchResponse,
    (2, 0): list_offsets_v0.ListOffsetsResponse,
    (19, 0): create_topics_v0.CreateTopicsResponse,
    (19, 1): create_topics_v1.CreateTopicsResponse,
    (20, 0): delete_topics_v0.DeleteTopicsResponse,
    (23, 0): offset_for_leader_epoch_v0.OffsetForLeaderEpochResponse,
    (23, 1): offset_for_leader_epoch_v1.OffsetForLeaderEpochResponse,
    (32, 0): describe_configs_v0.DescribeConfigsResponse,
    (34, 0): alter_replica_log_dirs_v1_response.AlterReplicaLogDirsResponse,
    (35, 0): describe_log_dirs_v1_response.DescribeLogDirsResponse,
}


def request_class(api_key: int, version: int):
    """The class of an old version, or None when kio has the version."""
    return _REQUESTS.get((api_key, version))


def response_class(api_key: int, version: int):
    return _RESPONSES.get((api_key, version))
