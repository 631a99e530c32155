"""Content-addressed disk cache of built modules, installed atomically and verified on load.

Layout: <root>/<key[:2]>/<key>/{kernel.c, <module>.so, build.log, meta.json}. meta.json, written
last, records the module's size and SHA-256; an entry whose module does not match them (or
whose meta.json is missing or unreadable) is damaged: it is moved aside with a warning naming
it and built again. Builds happen in private `.build-<host>-<pid>-*` folders under <root> and are
renamed into place; when two processes race, the loser discards its copy and loads the winner's.
Folders left by killed builds are swept before the next build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

from ..errors import CacheWarning
from ..version import __version__

STAGING_PREFIX = ".build-"
TRASH_PREFIX = ".trash-"
STALE_SECONDS = 24 * 3600  # staging folders of other hosts older than this are abandoned


def cache_key(source: str, compiler: str, fingerprint: str, flags: tuple) -> str:
    """SHA-256 over length-prefixed fields: source, compiler, its version, flags, versions."""
    fields = [
        source,
        compiler,
        fingerprint,
        " ".join(flags),
        __version__,
        sys.implementation.cache_tag,
        sysconfig.get_config_var("EXT_SUFFIX") or "",
    ]
    digest = hashlib.sha256()
    for text in fields:
        data = text.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def entry_dir(root: Path, key: str) -> Path:
    return Path(root) / key[:2] / key


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def damage(entry: Path):
    """Why the entry folder `entry` cannot be loaded, or None when it is complete and intact."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
        module = entry / meta["module_file"]
        size, sha256 = meta["module_bytes"], meta["module_sha256"]
    except FileNotFoundError:
        return "meta.json is missing"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"meta.json is unreadable ({exc.__class__.__name__})"
    try:
        if module.stat().st_size != size:
            return f"{module.name} has {module.stat().st_size} bytes, not {size}"
        if file_digest(module) != sha256:
            return f"{module.name} does not match its recorded SHA-256"
    except OSError as exc:
        return f"{module.name} cannot be read ({exc.__class__.__name__})"
    return None


def lookup(root: Path, key: str):
    """The directory of a complete, intact entry, or None. A damaged entry is moved aside with
    a CacheWarning, so that the caller builds it again."""
    path = entry_dir(root, key)
    if not path.exists():
        return None
    reason = damage(path)
    if reason is None:
        return path
    warnings.warn(
        f"the polyimage cache entry {path} is damaged ({reason}); rebuilding it",
        CacheWarning,
        stacklevel=3,
    )
    discard(path)
    return None


def discard(path: Path) -> None:
    """Remove a folder safely while other processes may look at it or have its module loaded:
    rename it out of the way first (a loaded module keeps its file), then delete it."""
    aside = Path(path).parent / f"{TRASH_PREFIX}{Path(path).name}-{os.getpid()}-{time.time_ns()}"
    try:
        os.rename(path, aside)
    except OSError:
        return  # already gone, or another process moved it
    shutil.rmtree(aside, ignore_errors=True)


def staging_dir(root: Path) -> Path:
    """A private folder to build in, after sweeping those that killed builds left behind."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    sweep(root)
    tag = f"{STAGING_PREFIX}{socket.gethostname()}-{os.getpid()}-"
    return Path(tempfile.mkdtemp(prefix=tag, dir=root))


def sweep(root: Path) -> int:
    """Delete staging folders whose build died and trash nobody finished deleting; returns how
    many went."""
    removed = 0
    trash = [p for p in Path(root).glob("??/" + TRASH_PREFIX + "*")]
    for path in list(Path(root).glob(STAGING_PREFIX + "*")) + trash:
        if path.name.startswith(TRASH_PREFIX) or _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _abandoned(staging: Path) -> bool:
    host, _, rest = staging.name[len(STAGING_PREFIX) :].rpartition("-")[0].rpartition("-")
    if host == socket.gethostname() and rest.isdigit():
        return not _alive(int(rest))
    try:
        return time.time() - staging.stat().st_mtime > STALE_SECONDS
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def install(staging: Path, root: Path, key: str, module_file: str, meta: dict) -> Path:
    """Record the module's size and hash, move a finished build into place; returns the entry
    that is in place afterwards (ours, or an intact one another process installed first)."""
    module = staging / module_file
    meta = dict(
        meta,
        module_file=module_file,
        module_bytes=module.stat().st_size,
        module_sha256=file_digest(module),
    )
    (staging / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    final = entry_dir(root, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        try:
            os.rename(staging, final)
            return final
        except OSError:
            if damage(final) is None:
                shutil.rmtree(staging, ignore_errors=True)
                return final
            discard(final)  # a damaged or half-deleted entry is in the way
    shutil.rmtree(staging, ignore_errors=True)
    raise OSError(f"cannot install the build into the polyimage cache at {final}")


def clear(root: Path) -> int:
    """Delete every entry; returns how many there were."""
    root = Path(root)
    entries = [p for p in root.glob("??/*") if p.is_dir()] if root.is_dir() else []
    for p in entries:
        shutil.rmtree(p, ignore_errors=True)
    return len(entries)
