"""services.py's commands and its reading of the answers, with a recording session."""

from __future__ import annotations

import json

import pytest

from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.deploy.services import HostServices, ServiceError
from kafkactl.cluster.deploy.ssh_results import CommandResult


class RecordingSession:
    name = "kafka-1"

    def __init__(self, *answers: CommandResult):
        self.answers = list(answers)
        self.commands: list[str] = []

    def run(self, command, *, input=None, timeout_s=None, check=True):
        self.commands.append(command)
        return self.answers.pop(0)


def answer(document, exit_status=0, stderr=""):
    return CommandResult(exit_status, json.dumps(document) if document is not None else "", stderr)


def test_the_supervisor_runs_from_current_with_the_install_root():
    session = RecordingSession(answer({"service": "broker", "action": "started"}))
    assert HostServices(session, HostLayout(), systemd=False).start("broker") == "started"
    assert session.commands == ["/opt/kafkactl/current/venv/bin/python -m kafkactl.cluster.deploy.supervisor "
                                "--root /opt/kafkactl --lock-timeout-s 60 start broker"]


def test_a_failed_start_names_the_host_and_shows_the_log_tail():
    session = RecordingSession(answer({"action": "failed", "error": "broker exited 1 within 2 s",
                                       "log_tail": ["a", "ConfigError: log.dirs missing"]}, exit_status=1))
    with pytest.raises(ServiceError, match=r"^host kafka-1: start broker failed: broker exited 1 within 2 s; "
                                           r"log: a \| ConfigError: log.dirs missing$"):
        HostServices(session, HostLayout(), systemd=False).start("broker")


def test_nothing_installed_means_nothing_to_stop_and_nothing_to_start():
    missing = CommandResult(127, "", "sh: 1: /opt/kafkactl/current/venv/bin/python: not found")
    services = HostServices(RecordingSession(missing, missing, missing), HostLayout(), systemd=False)
    assert services.stop("broker") == "none"
    assert services.status(["broker"])["broker"].running is False
    with pytest.raises(ServiceError, match="kafkactl is not installed there"):
        services.start("broker")


def test_status_reads_the_supervisors_answer():
    entry = {"defined": True, "running": True, "pid": 40, "child_pid": 41, "release": "0.1.0-aaaaaaaaaaaa",
             "uptime_s": 12.5, "restarts": 0, "state": "running", "pending_restart": True}
    session = RecordingSession(answer({"services": {"broker": entry}}))
    status = HostServices(session, HostLayout(), systemd=False).status(["broker", "zookeeper"])
    assert status["broker"].pid == 41 and status["broker"].pending_restart is True
    assert status["zookeeper"].defined is False and status["zookeeper"].running is False


def test_systemd_hosts_use_systemctl_and_start_is_idempotent():
    session = RecordingSession(CommandResult(0, "", ""))          # is-active: yes
    assert HostServices(session, HostLayout(), systemd=True).start("zookeeper") == "none"
    assert session.commands == ["systemctl is-active --quiet kafkactl-zookeeper.service"]
    session = RecordingSession(CommandResult(3, "", ""), CommandResult(0, "", ""))
    assert HostServices(session, HostLayout(), systemd=True).start("broker") == "started"
    assert session.commands[-1] == "systemctl start kafkactl-broker.service"
    shown = "LoadState=loaded\nActiveState=active\nMainPID=77\nNRestarts=2\n"
    status = HostServices(RecordingSession(CommandResult(0, shown, "")), HostLayout(), True).status(["broker"])
    assert status["broker"].running and status["broker"].pid == 77 and status["broker"].restarts == 2
