"""Ask ZooKeeper servers a four-letter word: run on a host by ansible.builtin.script.

    python3 zookeeper_four_letter.py WORD HOST:PORT [HOST:PORT...]

prints one JSON object, {"HOST:PORT": answer or null, ...}: null when the
server did not answer (refused, timed out, closed without a word). The roles
decide from the answers (`srvr`'s "Mode: leader", `ruok`'s "imok"); this
script only asks. Standard library only, no kafkactl: it also runs before a
release is installed. Every connection and read has a timeout and an answer
is cut at MAX_ANSWER_BYTES, so a stuck server cannot hold the play.
Exit status 0 (answers or not), 2 on bad usage.
"""

import json
import socket
import sys

TIMEOUT_S = 3.0
MAX_ANSWER_BYTES = 64 * 1024
WORDS = ("ruok", "srvr", "mntr", "stat", "conf")


def ask(address, word):
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=TIMEOUT_S) as conn:
            conn.settimeout(TIMEOUT_S)
            conn.sendall(word.encode("ascii"))
            chunks, size = [], 0
            while size < MAX_ANSWER_BYTES:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except (OSError, ValueError):
        return None
    answer = b"".join(chunks)[:MAX_ANSWER_BYTES].decode("utf-8", "replace")
    return answer or None


def main(argv):
    if len(argv) < 2 or argv[0] not in WORDS or not all(":" in a for a in argv[1:]):
        sys.stderr.write("usage: zookeeper_four_letter.py {%s} HOST:PORT...\n" % "|".join(WORDS))
        return 2
    json.dump({address: ask(address, argv[0]) for address in argv[1:]}, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
