"""What an inventory's `broker_config` and `zookeeper_config` may hold (pure).

Both use the programs' own property names: `broker_config` becomes lines of
each broker's server.properties, `zookeeper_config` lines of every zoo.cfg.
A key is refused when

- it is unknown: for brokers, not one the broker knows
  (`kafkactl.cluster.broker.config.properties_keys()`: the keys it acts on
  and the Kafka keys it accepts without acting on them); for ZooKeeper, not
  in `ZOOKEEPER_KEYS` below (the keys ZooKeeper 3.8 reads from zoo.cfg,
  either itself or as the `zookeeper.`-prefixed system properties it turns
  other keys into). ZooKeeper would take any key silently, so a typo would
  change nothing and go unnoticed; the error suggests the closest known key.
- the deploy sets it itself from the inventory (`MANAGED_*`): setting it
  again in the config would either be overwritten or contradict the hosts,
  ids and log dirs the inventory declares, so the error says where it comes
  from instead.

Values are YAML scalars and are written as the programs read them: a boolean
as `true`/`false` (`yes`/`no` for the few ZooKeeper keys that compare with
"yes"), numbers in decimal. Broker values are checked with the broker's own
parser, ZooKeeper values by the kind listed here, so a value the program
would refuse at start-up, or silently read as false, is refused before any
host is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkactl.cluster.broker.config import ConfigError, from_properties, properties_keys
from kafkactl.cluster.deploy.ansible_inventory import did_you_mean

MANAGED = "managed by kafkactl deploy"

# server.properties keys the deploy writes from the inventory, and from what.
MANAGED_BROKER_KEYS: Mapping[str, str] = {
    "broker.id": "set the host variable broker_id",
    "log.dirs": "set the host variable log_dirs",
    "log.dir": "set the host variable log_dirs",
    "log.dir.media": "set media in the host variable log_dirs",
    "broker.rack": "set the host variable rack",
    "zookeeper.connect": "built from the zookeeper group",
    # One PLAINTEXT listener on each host's address: the deploy derives the
    # listeners and the addresses it tells clients from the inventory.
    "listeners": "derived from the host's address",
    "advertised.listeners": "derived from the host's address",
    "listener.security.protocol.map": "the deploy runs one PLAINTEXT listener",
    "inter.broker.listener.name": "the deploy runs one PLAINTEXT listener",
}

# zoo.cfg keys the deploy writes itself.
MANAGED_ZOOKEEPER_KEYS: Mapping[str, str] = {
    "dataDir": "it holds myid, written from zookeeper_id",
    "dataLogDir": "the transaction log stays in the data dir the deploy creates",
    "clientPort": "brokers' zookeeper.connect is built from it",
    "clientPortAddress": "brokers' zookeeper.connect is built from it",
    # The ensemble is the zookeeper group: server.N lines come from it, and a
    # dynamic or reconfigurable ensemble would let zoo.cfg drift from it
    # (ZooKeeper rewrites zoo.cfg when reconfiguration is on).
    "dynamicConfigFile": "the ensemble is the zookeeper group",
    "reconfigEnabled": "the ensemble is the zookeeper group",
    "standaloneEnabled": "the ensemble is the zookeeper group",
    "peerType": "the ensemble is the zookeeper group",
}
MANAGED_ZOOKEEPER_PREFIXES: Mapping[str, str] = {
    "server.": "the ensemble is the zookeeper group",
    # hierarchical quorums: groups and weights of the ensemble's servers
    "group.": "the ensemble is the zookeeper group",
    "weight.": "the ensemble is the zookeeper group",
}

INT, POSITIVE, BOOL, YES_NO, PORT, STRING = "int", "positive", "bool", "yes_no", "port", "string"

# ZooKeeper 3.8's zoo.cfg keys (besides the managed ones) and the kind of value each takes.
ZOOKEEPER_KEYS: Mapping[str, str] = {
    "tickTime": POSITIVE, "initLimit": POSITIVE, "syncLimit": POSITIVE,
    "connectToLearnerMasterLimit": INT, "maxClientCnxns": INT, "maxCnxns": INT,
    "minSessionTimeout": INT, "maxSessionTimeout": INT, "clientPortListenBacklog": INT,
    "autopurge.snapRetainCount": INT, "autopurge.purgeInterval": INT,
    "localSessionsEnabled": BOOL, "localSessionsUpgradingEnabled": BOOL,
    "secureClientPort": PORT, "secureClientPortAddress": STRING, "observerMasterPort": PORT,
    "electionAlg": INT, "quorumListenOnAllIPs": BOOL, "syncEnabled": BOOL,
    "sslQuorum": BOOL, "portUnification": BOOL, "sslQuorumReloadCertFiles": BOOL,
    "quorum.auth.enableSasl": BOOL, "quorum.auth.learnerRequireSasl": BOOL,
    "quorum.auth.serverRequireSasl": BOOL, "quorum.auth.learner.saslLoginContext": STRING,
    "quorum.auth.server.saslLoginContext": STRING, "quorum.auth.kerberos.servicePrincipal": STRING,
    "quorum.cnxn.threads.size": INT, "quorumCnxnTimeoutMs": INT, "cnxTimeout": INT, "tcpKeepAlive": BOOL,
    "multiAddress.enabled": BOOL, "multiAddress.reachabilityCheckEnabled": BOOL,
    "multiAddress.reachabilityCheckTimeoutMs": INT,
    "jvm.pause.monitor": BOOL, "jvm.pause.info-threshold.ms": INT, "jvm.pause.warn-threshold.ms": INT,
    "jvm.pause.sleep.time.ms": INT,
    "4lw.commands.whitelist": STRING,
    "admin.enableServer": BOOL, "admin.serverAddress": STRING, "admin.serverPort": PORT,
    "admin.idleTimeout": INT, "admin.commandURL": STRING, "admin.forceHttps": BOOL,
    "admin.portUnification": BOOL,
    "metricsProvider.className": STRING,
    "globalOutstandingLimit": INT, "preAllocSize": INT, "snapCount": INT, "snapSizeLimitInKb": INT,
    "commitLogCount": INT, "snapshotSizeFactor": STRING, "txnLogSizeLimitInKb": INT,
    "maxResponseCacheSize": INT, "maxGetChildrenResponseCacheSize": INT, "fsync.warningthresholdms": INT,
    # ZooKeeper compares these two with "no"/"yes", not as booleans.
    "forceSync": YES_NO, "skipACL": YES_NO,
    "snapshot.trust.empty": BOOL, "audit.enable": BOOL, "serverCnxnFactory": STRING,
    "digest.enabled": BOOL, "closeSessionTxn.enabled": BOOL, "learner.asyncSending": BOOL,
    "learner.closeSocketAsync": BOOL, "leader.closeSocketAsync": BOOL, "enforceQuota": BOOL,
    "enableEagerACLCheck": BOOL, "flushDelay": INT, "maxWriteQueuePollTime": INT, "maxBatchSize": INT,
    "largeRequestMaxBytes": INT, "largeRequestThreshold": INT,
    "request_throttle_max_requests": INT, "request_throttle_stall_time": INT,
    "request_throttle_drop_stale": BOOL, "superUser": STRING, "sasl.serverconfig": STRING,
    "nio.numSelectorThreads": INT, "nio.numWorkerThreads": INT, "nio.directBufferBytes": INT,
    "nio.sessionlessCnxnTimeout": INT, "nio.shutdownTimeout": INT,
}
# Families of keys with names of the operator's choosing.
ZOOKEEPER_PREFIXES = ("ssl.", "authProvider.", "metricsProvider.")


def property_value(value: Any, yes_no: bool = False) -> str:
    """A YAML scalar as the properties line writes it; ValueError saying why not."""
    if value is None:
        raise ValueError("no value given")
    if isinstance(value, bool):
        return ("yes" if value else "no") if yes_no else ("true" if value else "false")
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if "\n" in value or "\r" in value:
            raise ValueError("the value contains a line break")
        return value
    raise ValueError(f"must be a string, number or boolean, not {type(value).__name__}")


def broker_key_problem(key: str) -> str | None:
    """Why `key` may not be in broker_config, or None."""
    if key in MANAGED_BROKER_KEYS:
        return f"{key} is {MANAGED} ({MANAGED_BROKER_KEYS[key]})"
    known = properties_keys()
    if key not in known:
        allowed = known - MANAGED_BROKER_KEYS.keys()
        return f"unknown key {key!r}{did_you_mean(key, allowed)}"
    return None


def broker_values_problem(properties: Mapping[str, str], broker_id: int, log_dirs: list[str]) -> str | None:
    """What the broker would refuse in these server.properties lines, with the
    managed keys as the deploy will set them; None if it would start."""
    managed = {"broker.id": str(broker_id), "zookeeper.connect": "zookeeper:2181", "log.dirs": ",".join(log_dirs)}
    try:
        from_properties({**properties, **managed})
    except ConfigError as error:
        return str(error)
    return None


def zookeeper_key_problem(key: str) -> str | None:
    """Why `key` may not be in zookeeper_config, or None."""
    if key in MANAGED_ZOOKEEPER_KEYS:
        return f"{key} is {MANAGED} ({MANAGED_ZOOKEEPER_KEYS[key]})"
    for prefix, why in MANAGED_ZOOKEEPER_PREFIXES.items():
        if key.startswith(prefix):
            return f"{key} is {MANAGED} ({why})"
    if key in ZOOKEEPER_KEYS or (key.startswith(ZOOKEEPER_PREFIXES) and key not in ZOOKEEPER_PREFIXES):
        return None
    return f"unknown key {key!r}{did_you_mean(key, ZOOKEEPER_KEYS)}"


def zookeeper_value(key: str, value: Any) -> str:
    """The zoo.cfg value of `key`; ValueError naming what is wrong with it."""
    kind = ZOOKEEPER_KEYS.get(key, STRING)
    if kind in (INT, POSITIVE, PORT):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"invalid value {value!r} (not an integer)")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"invalid value {value!r} (not an integer)") from None
        if kind == POSITIVE and number <= 0:
            raise ValueError(f"invalid value {value!r} (must be > 0)")
        if kind == PORT and not 1 <= number <= 65535:
            raise ValueError(f"invalid value {value!r} (not a port: 1..65535)")
        return str(number)
    if kind == BOOL:
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower()
        if not isinstance(value, bool):
            # ZooKeeper reads anything but "true" as false: refuse rather than let it.
            raise ValueError(f"invalid value {value!r} (expected true or false)")
    if kind == YES_NO:
        if isinstance(value, str) and value in ("yes", "no"):
            return value
        if not isinstance(value, bool):
            raise ValueError(f"invalid value {value!r} (expected yes or no)")
    return property_value(value, yes_no=kind == YES_NO)
