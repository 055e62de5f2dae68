"""multiRead against a real ZooKeeper: many znodes in few requests, each
answered on its own (a missing one fails only itself), under a chroot."""

from kazoo.exceptions import NoNodeError

from kafkactl.cluster.zk import client as zk_client
from kafkactl.cluster.zk import multi_read


def test_reads_existing_and_missing_znodes_in_order(zk_chroot):
    client = zk_client.connect(zk_chroot)
    try:
        count = 2 * multi_read.PATHS_PER_REQUEST + 7      # three requests, the last one short
        for i in range(count):
            client.create(f"/p/{i}", f'{{"i":{i}}}'.encode() if i % 5 else b"", makepath=True)
        client.set("/p/3", b"changed")
        paths = [f"/p/{i}" for i in range(count)] + ["/p/missing", "/nowhere/at/all"]
        results = multi_read.get_many(client, paths, timeout_s=10)
        assert len(results) == len(paths)
        for i in range(count):
            data, stat = results[i]
            expected = b"changed" if i == 3 else (f'{{"i":{i}}}'.encode() if i % 5 else b"")
            assert data == expected, i
            assert stat.version == (1 if i == 3 else 0)
        assert isinstance(results[-2], NoNodeError) and isinstance(results[-1], NoNodeError)
        # The same answers as one get per znode.
        assert [r[0] for r in results[:count]] == [client.get(p)[0] for p in paths[:count]]
    finally:
        zk_client.close(client)
