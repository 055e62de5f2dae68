import base64
import fcntl
import os
import threading

import paramiko
import pytest

from kafkactl.cluster.deploy.known_hosts import (
    KnownHostsConflict, KnownHostsError, describe_key, fingerprint_sha256, known_hosts_line, known_hosts_name,
    parse_known_hosts, read_known_hosts, record_host_key,
)

# Keys made with ssh-keygen, and the fingerprints `ssh-keygen -lf` printed for them.
ED25519 = ("ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAICUky0tfcB84UfS7LkkH/eGiA0S2mMvFbYCDNbslzisj",
           "SHA256:GcOYEI65D+lzEs1/geBjXI2Ns4PI2jBzYcV0/eV1JrE")
ECDSA = ("ecdsa-sha2-nistp256", "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBCDYeKm5If5KUFlB2BsR6dhSp1nSgFFV"
                                "d4mYo/Si4BL7FqSJ6QeM5VAlyzq/5Z5laWOFM7Xbp8NLx9AoHk8IUvE=",
         "SHA256:m40f1YYyUHpn87o8yHjibLYqvET9SMlX13YyimD0U4A")


def key(spec):
    key_type, key_base64, _ = spec
    return paramiko.PKey.from_type_string(key_type, base64.b64decode(key_base64))


def test_fingerprints_are_openssh_sha256_without_padding():
    for spec in (ED25519, ECDSA):
        assert fingerprint_sha256(key(spec).asbytes()) == spec[2]
        assert not spec[2].endswith("=")
    assert describe_key(key(ED25519)) == f"ssh-ed25519 {ED25519[2]}"


def test_the_host_field_names_the_port_only_when_it_is_not_22():
    assert known_hosts_name("10.0.0.5", 22) == "10.0.0.5"
    assert known_hosts_name("10.0.0.5", 2222) == "[10.0.0.5]:2222"
    assert known_hosts_name("kafka-1.example.com", 22) == "kafka-1.example.com"
    assert known_hosts_name("fd00::5", 2222) == "[fd00::5]:2222"
    assert known_hosts_line("10.0.0.5", 2222, "ssh-ed25519", ED25519[1]) == \
        f"[10.0.0.5]:2222 ssh-ed25519 {ED25519[1]}\n"
    assert known_hosts_line("10.0.0.5", 22, "ssh-ed25519", ED25519[1]) == f"10.0.0.5 ssh-ed25519 {ED25519[1]}\n"


def test_parse_reads_what_openssh_reads_and_skips_the_rest():
    hashed = paramiko.HostKeys.hash_host("10.0.0.7")
    text = (f"# a comment\n\n"
            f"10.0.0.5,kafka-1 {ED25519[0]} {ED25519[1]}\n"
            f"[10.0.0.6]:2222 {ECDSA[0]} {ECDSA[1]} a comment\n"
            f"{hashed} {ED25519[0]} {ED25519[1]}\n"
            f"10.0.0.8 ssh-ed25519 not*base64\n"
            f"10.0.0.9 ssh-unknown-type AAAA\n"
            f"@cert-authority *.example.com {ECDSA[0]} {ECDSA[1]}\n"
            f"@revoked * {ECDSA[0]} {ECDSA[1]}\n")
    known = parse_known_hosts(text)
    assert known.keys.lookup("10.0.0.5")[ED25519[0]] == key(ED25519)
    assert known.keys.lookup("kafka-1")[ED25519[0]] == key(ED25519)
    assert known.keys.lookup("[10.0.0.6]:2222")[ECDSA[0]] == key(ECDSA)
    assert known.keys.lookup("10.0.0.6") is None          # the port is part of the name
    assert known.keys.lookup("10.0.0.7")[ED25519[0]] == key(ED25519)   # a hashed name
    assert known.keys.lookup("10.0.0.8") is None and known.keys.lookup("10.0.0.9") is None
    assert known.keys.lookup("a.example.com") is None     # no host certificates
    assert known.revoked == {key(ECDSA).asbytes()}


def test_a_missing_file_has_no_keys(tmp_path):
    known = read_known_hosts(tmp_path / "nowhere" / "known_hosts", 1.0)
    assert list(known.keys.keys()) == [] and known.revoked == frozenset()


def test_record_creates_the_file_0600_in_a_0700_directory_and_writes_an_openssh_line(tmp_path):
    path = tmp_path / "new" / "known_hosts"
    assert record_host_key(path, "10.0.0.5", 2222, ED25519[0], ED25519[1], 1.0) is True
    assert path.read_text() == f"[10.0.0.5]:2222 {ED25519[0]} {ED25519[1]}\n"
    assert (os.stat(path).st_mode & 0o777, os.stat(path.parent).st_mode & 0o777) == (0o600, 0o700)
    assert read_known_hosts(path, 1.0).keys.lookup("[10.0.0.5]:2222")[ED25519[0]] == key(ED25519)


def test_record_writes_a_key_once_and_starts_a_new_line_after_an_unterminated_one(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(f"10.0.0.1 {ECDSA[0]} {ECDSA[1]}")   # no newline at the end
    assert record_host_key(path, "10.0.0.5", 22, ED25519[0], ED25519[1], 1.0) is True
    assert record_host_key(path, "10.0.0.5", 22, ED25519[0], ED25519[1], 1.0) is False
    assert path.read_text().splitlines() == [f"10.0.0.1 {ECDSA[0]} {ECDSA[1]}", f"10.0.0.5 {ED25519[0]} {ED25519[1]}"]


def test_record_refuses_a_host_that_already_has_another_key(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(f"10.0.0.5 {ECDSA[0]} {ECDSA[1]}\n")
    with pytest.raises(KnownHostsConflict, match=r"already records another key for 10\.0\.0\.5") as error:
        record_host_key(path, "10.0.0.5", 22, ED25519[0], ED25519[1], 1.0)
    assert error.value.recorded == f"{ECDSA[0]} {ECDSA[2]}"
    assert path.read_text() == f"10.0.0.5 {ECDSA[0]} {ECDSA[1]}\n"


def test_threads_recording_the_same_key_at_once_write_it_once(tmp_path):
    path = tmp_path / "known_hosts"
    writers = 8
    start = threading.Barrier(writers)
    results, errors = [], []

    def record():
        try:
            start.wait(timeout=30)
            results.append(record_host_key(path, "10.0.0.5", 22, ED25519[0], ED25519[1], 30.0))
        except Exception as error:   # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=record) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(results) == [False] * (writers - 1) + [True]
    assert path.read_text() == f"10.0.0.5 {ED25519[0]} {ED25519[1]}\n"


def test_a_lock_held_elsewhere_is_waited_for_within_the_bound_only(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text("")
    with open(path, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)   # another process appending, stuck
        with pytest.raises(KnownHostsError, match=rf"{path}: still locked by another process after 0.1 s"):
            record_host_key(path, "10.0.0.5", 22, ED25519[0], ED25519[1], 0.1)
        with pytest.raises(KnownHostsError, match="still locked"):
            read_known_hosts(path, 0.1)
    assert path.read_text() == ""
