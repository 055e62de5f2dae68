"""Write docs/cli.md from the kafkactl app itself.

    .venv/bin/python scripts/cli_docs.py            # or: make docs

Every command of the app gets a section: its help text and options as
`kafkactl ... --help` prints them, and an example run for real against a
local 4-broker cluster this script starts (and always stops) in
/tmp/kafkactl-docs, with the output it printed. The examples run in order,
as one story an operator could type. tests/unit/cli/test_cli_docs.py fails
when a command has no example here or its help in docs/cli.md is stale, so
the reference cannot drift from the app.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "cli.md"
KAFKACTL = Path(sys.executable).parent / "kafkactl"
WORK = Path("/tmp/kafkactl-docs")
HELP_WIDTH = 100
OUTPUT_LINES = 30           # longer outputs are cut, saying how many lines were left out


@dataclass(frozen=True)
class Example:
    argv: tuple[str, ...]                 # after `kafkactl`
    exit_code: int = 0
    note: str = ""                        # one line shown above the example
    stdin: str | None = None
    shown_only: bool = False              # not run here: it needs what the story has not (SSH hosts)


def example(*argv: str, exit_code: int = 0, note: str = "", stdin: str | None = None,
            shown_only: bool = False) -> Example:
    return Example(tuple(argv), exit_code, note, stdin, shown_only)


def deploy_example(*argv: str, note: str = "") -> Example:
    """`kafkactl deploy ...`: shown, not run (it needs real hosts over SSH;
    tests/integration/deploy/test_deploy.py runs each of them)."""
    return example("deploy", *argv, note=note, shown_only=True)


PLAN = str(WORK / "plan.json")
ELECTION = str(WORK / "election.json")

# The story, in order. Each documented command appears at least once.
EXAMPLES: list[Example] = [
    example("cluster", "up", "--brokers", "4", "--dir", str(WORK / "cluster"), "--name", "docs",
            note="A local cluster to try things on: ZooKeeper and 4 brokers, saved as context `docs`."),
    example("cluster", "status"),
    example("context", "list"),
    example("context", "current"),
    example("context", "set", "prod", "--zookeeper", "zk1.example.com:2181,zk2.example.com:2181/kafka",
            note="Contexts name clusters; `-z` or KAFKACTL_ZOOKEEPER override them."),
    example("context", "use", "docs"),
    example("topics", "create", "orders", "--partitions", "6", "--replication-factor", "3",
            "--config", "min.insync.replicas=2"),
    example("topics", "create", "audit", "--replica-assignment", "1:2:3,2:3:4,3:4:1",
            note="An explicit assignment: partition 0 on brokers 1, 2, 3 (1 preferred), and so on."),
    example("topics", "create", "bad topic", "--partitions", "1", "--replication-factor", "1", exit_code=2,
            note="Bad input is refused before anything is written (exit 2)."),
    example("topics", "list"),
    example("topics", "describe", "orders"),
    example("topics", "alter", "orders", "--partitions", "8"),
    example("topics", "alter", "audit", "--replication-factor", "2", "--yes", "--wait",
            note="Kafka's scripts cannot change a replication factor; here the reassignment is proposed "
                 "(leaders stay first) and run as `reassign execute` runs it. --dry-run shows the plan only."),
    example("configs", "alter", "--topic", "orders", "--add", "retention.ms=86400000"),
    example("configs", "describe", "--topic", "orders"),
    example("configs", "alter", "--broker-default", "--add", "follower.replication.throttled.rate=50000000"),
    example("configs", "describe", "--broker-default", "-o", "json"),
    example("configs", "alter", "--broker", "2", "--add", "log.retention.ms=3600000", "--add", "num.io.threads=16",
            note="Any config Kafka 2.8 updates dynamically; broker 2's own value wins over the cluster-wide one."),
    example("configs", "describe", "--broker", "2"),
    example("configs", "alter", "--broker-default", "--add", "listeners=PLAINTEXT://:9093", exit_code=2,
            note="Listener, SSL and SASL configs are per broker: refused cluster-wide, as Kafka refuses them."),
    example("brokers", "list"),
    example("brokers", "describe", "1"),
    example("controller", "show"),
    example("isr", "orders"),
    example("reassign", "generate", "--topics", "orders", "--brokers", "2,3,4", "-o", "json",
            note="Propose moving `orders` off broker 1, in Kafka's reassignment JSON; the next step "
                 "executes this `proposed` plan, saved as plan.json."),
    example("reassign", "execute", "--plan", PLAN, "--throttle", "20000000", "--wait",
            "--rollback-file", str(WORK / "rollback.json")),
    example("reassign", "verify", "--plan", PLAN),
    example("reassign", "status"),
    example("metrics", "snapshot", "--out", str(WORK / "snapshot"), "--network-in-capacity", "125000000",
            "--network-out-capacity", "125000000",
            note="What the planner reads: assignment from ZooKeeper, sizes and rates from every broker's "
                 "/metrics (see docs/snapshot.md)."),
    example("plan", "--snapshot", str(WORK / "snapshot"), "--out", str(WORK / "plan"), "--master", "local[2]",
            note="The placement planner on that snapshot (PySpark; see docs/planner.md): it writes plan.json "
                 "for `reassign execute`, rollback.json, report.md/json and utilization.png."),
    example("reassign", "cancel", "--yes", exit_code=1,
            note="With nothing running, there is nothing to cancel."),
    example("elect", "preferred", "--all"),
    example("elect", "preferred", "--plan", ELECTION, note="Kafka's election JSON is accepted as it is."),
    example("elect", "unclean", "--topic", "audit", "--partition", "0", "--yes",
            note="Unclean election only acts on offline partitions; this one has a leader."),
    example("groups", "reset-offsets", "billing", "--topic", "orders", "--to-earliest",
            note="Consumer groups over the Kafka protocol (see docs/groups.md). A reset is a dry run without "
                 "--execute; a group that does not exist yet may be reset, which creates it."),
    example("groups", "reset-offsets", "billing", "--topic", "orders", "--to-earliest", "--execute"),
    example("groups", "list"),
    example("groups", "describe", "billing"),
    example("groups", "lag"),
    example("groups", "lag", "--max-lag", "1000", exit_code=1,
            note="For alerting: exit 1 when a group's total lag is above --max-lag."),
    example("groups", "reset-offsets", "billing", "--topic", "orders:0,1", "--shift-by", "100", "--export",
            note="--export prints the plan as kafka-consumer-groups.sh --export does, for --from-file."),
    example("groups", "delete-offsets", "billing", "--topic", "orders:0"),
    example("groups", "delete", "billing"),
    example("topics", "describe", "--under-replicated-partitions", exit_code=0,
            note="Health filters exit 1 when they find something, 0 when the cluster is healthy."),
    example("topics", "delete", "audit", "--yes", "--wait"),
    example("context", "delete", "prod"),
    example("cluster", "down", "--purge"),
    deploy_example("wheelhouse", note="Deploying onto hosts over SSH (docs/deploy.md). These examples are shown, "
                   "not run: they need hosts; tests/integration/deploy runs each against real sshd hosts."),
    deploy_example("plan", "-i", "inventory.yml"),
    deploy_example("install", "-i", "inventory.yml"),
    deploy_example("start", "-i", "inventory.yml"),
    deploy_example("status", "-i", "inventory.yml", "-o", "json"),
    deploy_example("rolling-restart", "-i", "inventory.yml"),
    deploy_example("restart", "-i", "inventory.yml", "--host", "kafka-2"),
    deploy_example("stop", "-i", "inventory.yml"),
    deploy_example("uninstall", "-i", "inventory.yml", "--purge-data", "--yes"),
]

# What operators coming from Kafka's scripts type instead.
KAFKA_TOOLS = [
    ("kafka-topics.sh --zookeeper Z --list", "kafkactl -z Z topics list"),
    ("kafka-topics.sh --zookeeper Z --describe --topic T", "kafkactl -z Z topics describe T"),
    ("kafka-topics.sh --bootstrap-server B --list", "kafkactl -b B topics list"),
    ("kafka-topics.sh --bootstrap-server B --describe --topic T", "kafkactl -b B topics describe T"),
    ("kafka-topics.sh --bootstrap-server B --create --topic T --partitions 6 --replication-factor 3",
     "kafkactl -b B topics create T -p 6 -r 3"),
    ("kafka-topics.sh --bootstrap-server B --alter --topic T --partitions 8",
     "kafkactl -b B topics alter T --partitions 8"),
    ("kafka-topics.sh --bootstrap-server B --delete --topic T", "kafkactl -b B topics delete T"),
    ("kafka-configs.sh --bootstrap-server B --entity-type topics --entity-name T --alter --add-config k=v",
     "kafkactl -b B configs alter --topic T --add k=v"),
    ("kafka-configs.sh --bootstrap-server B --entity-type brokers --entity-default --describe",
     "kafkactl -b B configs describe --broker-default"),
    ("kafka-leader-election.sh --bootstrap-server B --election-type preferred --all-topic-partitions",
     "kafkactl -b B elect preferred --all"),
    ("kafka-log-dirs.sh --bootstrap-server B --describe", "kafkactl -b B brokers list"),
    ("kafka-metadata-quorum.sh / kafka-broker-api-versions.sh --bootstrap-server B", "kafkactl -b B controller show"),
    ("kafka-topics.sh ... --describe --under-replicated-partitions", "kafkactl topics describe --under-replicated-partitions"),
    ("kafka-topics.sh ... --describe --unavailable-partitions", "kafkactl topics describe --unavailable-partitions"),
    ("kafka-topics.sh ... --create --topic T --partitions 6 --replication-factor 3 --config k=v",
     "kafkactl topics create T -p 6 -r 3 --config k=v"),
    ("kafka-topics.sh ... --create --topic T --replica-assignment 1:2,2:3", "kafkactl topics create T --replica-assignment 1:2,2:3"),
    ("kafka-topics.sh ... --alter --topic T --partitions 8", "kafkactl topics alter T --partitions 8"),
    ("kafka-reassign-partitions.sh --execute --reassignment-json-file HAND_WRITTEN_RF_PLAN.json",
     "kafkactl topics alter T --replication-factor 3 [--throttle B] [--wait]"),
    ("kafka-topics.sh ... --delete --topic T", "kafkactl topics delete T"),
    ("kafka-configs.sh --zookeeper Z --entity-type topics --entity-name T --alter --add-config k=v",
     "kafkactl -z Z configs alter --topic T --add k=v"),
    ("kafka-configs.sh ... --entity-type brokers --entity-default --describe", "kafkactl configs describe --broker-default"),
    ("kafka-configs.sh --bootstrap-server B --entity-type brokers --entity-name 2 --alter --add-config k=v",
     "kafkactl configs alter --broker 2 --add k=v"),
    ("kafka-reassign-partitions.sh --generate --topics-to-move-json-file F --broker-list 1,2,3",
     "kafkactl reassign generate --topics T... --brokers 1,2,3"),
    ("kafka-reassign-partitions.sh --execute --reassignment-json-file P --throttle B",
     "kafkactl reassign execute --plan P --throttle B [--wait]"),
    ("kafka-reassign-partitions.sh --verify --reassignment-json-file P", "kafkactl reassign verify --plan P"),
    ("kafka-leader-election.sh --election-type preferred --all-topic-partitions", "kafkactl elect preferred --all"),
    ("kafka-leader-election.sh --election-type unclean --topic T --partition 0", "kafkactl elect unclean --topic T --partition 0"),
    ("kafka-preferred-replica-election.sh --zookeeper Z", "kafkactl -z Z elect preferred --all"),
    ("kafka-consumer-groups.sh --bootstrap-server B --list", "kafkactl -b B groups list"),
    ("kafka-consumer-groups.sh ... --describe --group G --members --offsets", "kafkactl groups describe G"),
    ("kafka-consumer-groups.sh ... --describe --all-groups", "kafkactl groups lag [--max-lag N]"),
    ("kafka-consumer-groups.sh ... --reset-offsets --group G --topic T --to-earliest [--execute]",
     "kafkactl groups reset-offsets G --topic T --to-earliest [--execute]"),
    ("kafka-consumer-groups.sh ... --reset-offsets --group G --all-topics --shift-by -10 --export",
     "kafkactl groups reset-offsets G --all-topics --shift-by -10 --export"),
    ("kafka-consumer-groups.sh ... --delete --group G", "kafkactl groups delete G"),
    ("kafka-consumer-groups.sh ... --delete-offsets --group G --topic T", "kafkactl groups delete-offsets G --topic T"),
]


BACKEND_TABLE = [
    ("topics list, describe", "znodes", "Metadata, DescribeConfigs (min.insync.replicas)"),
    ("topics create", "/brokers/topics + /config/topics, one multi", "CreateTopics (kafkactl's assignment)"),
    ("topics alter --partitions", "conditional write of /brokers/topics/T", "CreatePartitions"),
    ("topics alter --replication-factor", "reassignment + throttles, one multi checked against the topic znode",
     "as reassign execute: the topic's replicas read again just before (refused if they changed), then the "
     "throttles with IncrementalAlterConfigs, then AlterPartitionReassignments"),
    ("topics delete", "/admin/delete_topics", "DeleteTopics (no \"marked for deletion\" state to see)"),
    ("configs describe, alter", "/config/... + change notification", "DescribeConfigs, IncrementalAlterConfigs"),
    ("brokers list, describe", "/brokers/ids, DescribeLogDirs", "Metadata (no listener name, no broker epoch), "
     "DescribeLogDirs"),
    ("controller show", "/controller, /controller_epoch", "Metadata (the id only: no epoch, no election time)"),
    ("elect preferred", "/admin/preferred_replica_election", "ElectLeaders (PREFERRED)"),
    ("elect unclean", "unclean.leader.election.enable, then restored", "ElectLeaders (UNCLEAN)"),
    ("isr", "state znodes (when the ISR changed), ListOffsets", "Metadata, DescribeConfigs (min.insync.replicas), "
     "ListOffsets; no time of the ISR's last change (null, \"since\" left out)"),
    ("reassign generate, execute, verify, status, cancel", "/admin/reassign_partitions, throttles",
     "AlterPartitionReassignments, ListPartitionReassignments; --throttle: the same throttle configs, set with "
     "IncrementalAlterConfigs before the move (not one multi with it) and removed by verify (the live brokers' "
     "rates only); cancel is KIP-455's (the replicas from before at once) and removes the throttles at once, "
     "as Kafka's --cancel does"),
    ("groups ...", "brokers from /brokers/ids, leaders from znodes", "brokers and leaders from Metadata; the group APIs"),
    ("metrics snapshot", "znodes + the brokers' metrics endpoints", "Metadata + the brokers' metrics endpoints"),
]


# ---- the app's commands and their help ------------------------------------------

def commands() -> dict[tuple[str, ...], object]:
    """Every runnable command of the app (leaf commands, and groups that run
    on their own), by path."""
    import typer

    from kafkactl.cli.main import app

    found: dict[tuple[str, ...], object] = {}

    def walk(command, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name in sorted(subcommands):
                walk(subcommands[name], path + (name,))
        elif path:
            found[path] = command

    walk(typer.main.get_command(app), ())
    return found


def help_text(path: tuple[str, ...]) -> str:
    """What `kafkactl <path> --help` prints, at a fixed width."""
    import typer
    from typer._click import Context   # typer vendors click

    from kafkactl.cli.main import PROG, app

    command = typer.main.get_command(app)
    context = Context(command, info_name=PROG, terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH)
    for name in path:
        command = command.commands[name]
        context = Context(command, info_name=name, parent=context,
                                terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH)
    return command.get_help(context).rstrip()


def documented_paths() -> set[tuple[str, ...]]:
    known = commands()
    paths = set()
    for item in EXAMPLES:
        words = tuple(a for a in item.argv if not a.startswith("-"))
        for length in range(len(words), 0, -1):
            if words[:length] in known:
                paths.add(words[:length])
                break
    return paths


# ---- running the story ----------------------------------------------------------

def run_examples() -> list[tuple[Example, str]]:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    env = {**os.environ, "KAFKACTL_CONFIG": str(WORK / "config.json"), "XDG_STATE_HOME": str(WORK / "state"),
           "COLUMNS": str(HELP_WIDTH)}
    env.pop("KAFKACTL_ZOOKEEPER", None)
    ran = []
    try:
        for item in EXAMPLES:
            if item.shown_only:
                ran.append((item, ""))
                continue
            if item.argv[:2] == ("reassign", "execute"):
                _produce(env)
            if item.argv[:2] == ("elect", "preferred") and "--plan" in item.argv:
                Path(ELECTION).write_text(json.dumps({"partitions": [{"topic": "orders", "partition": 0}]}))
            output = _run(item, env)
            if item.argv[:2] == ("reassign", "generate"):
                Path(PLAN).write_text(json.dumps(json.loads(output)["proposed"]))
            ran.append((item, output))
    finally:
        subprocess.run([str(KAFKACTL), "cluster", "down", "--dir", str(WORK / "cluster"), "--purge"],
                       env=env, capture_output=True, timeout=120)
    return ran


def _run(item: Example, env: dict) -> str:
    done = subprocess.run([str(KAFKACTL), *item.argv], env=env, input=item.stdin, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != item.exit_code:
        raise SystemExit(f"kafkactl {' '.join(item.argv)}: exit {done.returncode}, expected {item.exit_code}\n"
                         f"{done.stdout}{done.stderr}")
    return (done.stdout + done.stderr).rstrip()


def _produce(env: dict) -> None:
    """Some data, so the reassignment moves bytes."""
    status = json.loads(subprocess.run([str(KAFKACTL), "cluster", "status", "-o", "json"], env=env,
                                       capture_output=True, text=True, timeout=60).stdout)
    bootstrap = ",".join(f"{b['host']}:{b['port']}" for b in status["brokers"])
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(2000))
    subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", "orders", "-K:"], input=lines, text=True,
                   capture_output=True, timeout=60, check=True)


# ---- writing the page -----------------------------------------------------------

def render(ran: list[tuple[Example, str]]) -> str:
    parts = [
        "# kafkactl command reference",
        "",
        "Generated by `scripts/cli_docs.py` (`make docs`) from the app itself: each command's help as "
        "`--help` prints it, and an example run against a local 4-broker cluster, with its real output. "
        "The examples run in this order, as one session. A test fails when a command has no example "
        "or its help here is stale.",
        "",
        "Shared options, accepted anywhere on the command line: `-z/--zookeeper HOST:PORT[/chroot]` "
        "(env `KAFKACTL_ZOOKEEPER`), `-b/--bootstrap-server HOST:PORT[,HOST:PORT]` (env "
        "`KAFKACTL_BOOTSTRAP_SERVERS`), `--context NAME`, `-o/--output table|json|yaml`, `--timeout SECONDS`, "
        "`--debug`. Exit codes: 0 done, 1 the operation failed or found what was asked about, 2 bad usage "
        "or bad input.",
        "",
        "## Coming from Kafka's scripts",
        "",
        "| Apache Kafka | kafkactl |",
        "|---|---|",
        *[f"| `{kafka}` | `{ours}` |" for kafka, ours in KAFKA_TOOLS],
        "",
        "## ZooKeeper (-z) or the Admin API (-b)",
        "",
        "Every command that talks to a cluster takes its address from -z/--zookeeper or "
        "-b/--bootstrap-server (or $KAFKACTL_ZOOKEEPER / $KAFKACTL_BOOTSTRAP_SERVERS, or a context "
        "saved with `kafkactl context set NAME -z ...` or `-b ...`); giving both is refused. "
        "With -b kafkactl speaks only standard Admin API requests, so it also administers KRaft "
        "clusters (Kafka 3.3+, 4.x) that have no ZooKeeper. What one way cannot do is refused "
        "in one line, exit 2.",
        "",
        "| Operation | -z ZooKeeper | -b Admin API |",
        "|---|---|---|",
        *[f"| {operation} | {zk} | {admin} |" for operation, zk, admin in BACKEND_TABLE],
        "",
        "## Commands",
        "",
    ]
    by_path: dict[tuple[str, ...], list[tuple[Example, str]]] = {}
    known = commands()
    for item, output in ran:
        words = tuple(a for a in item.argv if not a.startswith("-"))
        path = next(words[:n] for n in range(len(words), 0, -1) if words[:n] in known)
        by_path.setdefault(path, []).append((item, output))
    for path in sorted(known):
        parts += [f"### kafkactl {' '.join(path)}", "", "```text", help_text(path), "```", ""]
        for item, output in by_path.get(path, []):
            if item.note:
                parts += [item.note, ""]
            lines = _cut(output).splitlines() if output else []
            parts += ["```console", f"$ kafkactl {_quoted(item.argv)}", *lines, "```", ""]
    return "\n".join(parts)


def _quoted(argv: tuple[str, ...]) -> str:
    return " ".join(a if a and all(c.isalnum() or c in "-_.,:=/@" for c in a) else f"'{a}'" for a in argv)


def _cut(output: str) -> str:
    lines = output.splitlines()
    if len(lines) <= OUTPUT_LINES:
        return output
    return "\n".join(lines[:OUTPUT_LINES] + [f"… ({len(lines) - OUTPUT_LINES} more lines)"])


def main() -> int:
    missing = sorted(set(commands()) - documented_paths())
    if missing:
        print("no example for: " + ", ".join(" ".join(p) for p in missing), file=sys.stderr)
        return 1
    DOC.write_text(render(run_examples()) + "\n")
    print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
