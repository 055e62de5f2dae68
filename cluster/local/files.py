"""Small file helpers shared by the local cluster and the CLI config."""

import os
import tempfile
from pathlib import Path

from kafkactl.cluster.log.durable import fsync_dir


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace path with text so readers see the old or the new file, never half.

    The temporary file lives in the same directory (os.replace is atomic only
    within one filesystem) and is fsynced before the rename, and the
    directory after it, so a crash cannot leave an empty file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
