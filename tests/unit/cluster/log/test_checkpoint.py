import os

import pytest

from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.errors import CheckpointFormatError


def test_round_trip_and_format(tmp_path):
    path = os.path.join(tmp_path, "replication-offset-checkpoint")
    offsets = {("orders", 1): 42, ("orders", 0): 7, ("a.b-c_d", 12): 0}
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write(offsets)
    assert checkpoint.read() == offsets
    with open(path) as file:
        assert file.read() == "0\n3\na.b-c_d 12 0\norders 0 7\norders 1 42\n"
    assert not os.path.exists(path + ".tmp")


def test_empty_and_missing(tmp_path):
    path = os.path.join(tmp_path, "recovery-point-offset-checkpoint")
    assert OffsetCheckpointFile(path).read() == {}
    OffsetCheckpointFile(path).write({})
    with open(path) as file:
        assert file.read() == "0\n0\n"
    assert OffsetCheckpointFile(path).read() == {}


@pytest.mark.parametrize("content, line, message", [
    ("", 1, "missing"),
    ("1\n0\n", 1, "unsupported version"),
    ("x\n0\n", 1, "not an integer"),
    ("0\n2\nt 0 1\n", 2, "entry count 2"),
    ("0\n1\nt 0 1\nt 1 1\n", 2, "entry count 1"),
    ("0\n1\nt 0\n", 3, "3 space-separated fields"),
    ("0\n1\nt  0 1\n", 3, "fields"),
    ("0\n2\nt 0 1\nt x 1\n", 4, "invalid literal"),
    ("0\n1\nt -1 5\n", 3, "negative partition"),
    ("0\n2\nt 0 1\nt 0 2\n", 4, "duplicate"),
    ("\xff\n", 1, "UTF-8"),
])
def test_malformed_files_name_file_and_line(tmp_path, content, line, message):
    path = os.path.join(tmp_path, "log-start-offset-checkpoint")
    with open(path, "wb") as file:
        file.write(content.encode("latin-1"))
    with pytest.raises(CheckpointFormatError, match=message) as error:
        OffsetCheckpointFile(path).read()
    assert error.value.line_number == line
    assert error.value.path == path
    assert str(error.value).startswith(f"{path}:{line}:")
    assert error.value.error_code == 56
