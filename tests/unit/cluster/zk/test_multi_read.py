"""The multiRead request and response codec, byte by byte."""

import struct

from kazoo.exceptions import NoNodeError

from kafkactl.cluster.zk.multi_read import MultiRead

STAT = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


def test_the_request_is_one_getdata_per_path_then_the_end_marker():
    body = MultiRead(("/a", "/bc")).serialize()
    assert body == (struct.pack("!iBi", 4, 0, -1) + struct.pack("!i", 2) + b"/a" + b"\x00"
                    + struct.pack("!iBi", 4, 0, -1) + struct.pack("!i", 3) + b"/bc" + b"\x00"
                    + struct.pack("!iBi", -1, 1, -1))
    assert MultiRead(()).type == 22


def test_the_response_gives_data_and_stat_or_the_error_per_path():
    response = (b"xx"                                       # an offset before the body
                + struct.pack("!iBi", 4, 0, 0) + struct.pack("!i", 3) + b"abc" + struct.pack("!qqqqiiiqiiq", *STAT)
                + struct.pack("!iBi", -1, 0, -101) + struct.pack("!i", -101)
                + struct.pack("!iBi", 4, 0, 0) + struct.pack("!i", -1) + struct.pack("!qqqqiiiqiiq", *STAT)
                + struct.pack("!iBi", -1, 1, -1))
    first, second, third = MultiRead.deserialize(response, 2)
    assert first[0] == b"abc" and first[1].version == 5 and first[1].mzxid == 2
    assert isinstance(second, NoNodeError)
    assert third[0] == b""
