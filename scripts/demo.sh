#!/usr/bin/env bash
# `make demo`: a local cluster (ZooKeeper + 3 brokers), a topic, kcat producing
# and consuming (also as a consumer group), then the group, the cluster's
# status and the topic's partitions. The
# cluster keeps running afterwards; the last lines say how to stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
KAFKACTL=.venv/bin/kafkactl
TOPIC=demo

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step kafkactl cluster up --brokers 3
$KAFKACTL cluster up --brokers 3 >/dev/null
BOOTSTRAP=$($KAFKACTL cluster status -o json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["bootstrap_servers"])')

# Every partition on all three brokers; an acks=all write needs two of them.
step kafkactl topics create $TOPIC --partitions 3 --replication-factor 3 --config min.insync.replicas=2 --if-not-exists
$KAFKACTL topics create $TOPIC --partitions 3 --replication-factor 3 --config min.insync.replicas=2 --if-not-exists

step "seq 1 10 | sed 's/.*/key-&:hello &/' | kcat -b \$BOOTSTRAP -t $TOPIC -P -K: -X acks=all"
seq 1 10 | sed 's/.*/key-&:hello &/' | kcat -b "$BOOTSTRAP" -t $TOPIC -P -K: -X acks=all

step "kcat -b \$BOOTSTRAP -t $TOPIC -C -e -o beginning -f 'partition %p offset %o  %k = %s\n'"
kcat -b "$BOOTSTRAP" -t $TOPIC -C -e -o beginning -q -f 'partition %p offset %o  %k = %s\n' | sort

# A consumer group: kcat's balanced consumer commits what it read on exit.
step "kcat -b \$BOOTSTRAP -G demo-readers -o beginning -e $TOPIC"
kcat -b "$BOOTSTRAP" -G demo-readers -o beginning -e -q -f 'partition %p offset %o  %k = %s\n' $TOPIC | sort

step kafkactl groups describe demo-readers
$KAFKACTL groups describe demo-readers

step kafkactl cluster status
$KAFKACTL cluster status

step kafkactl topics describe $TOPIC
$KAFKACTL topics describe $TOPIC

cat <<EOT

The cluster is still running (bootstrap servers: $BOOTSTRAP).
Try: .venv/bin/kafkactl topics list     .venv/bin/kafkactl groups lag     kcat -b $BOOTSTRAP -L
Stop it with:   .venv/bin/kafkactl cluster down           (add --purge to delete its data too)
EOT
