"""Content-addressed disk cache of built modules, installed atomically and verified on load.

Layout: <root>/<key[:2]>/<key>/{kernel.c, <module>.so, build.log, meta.json}. meta.json, written
last, records the module's size and SHA-256; an entry whose module does not match them (or
whose meta.json is missing or unreadable) is damaged: it is moved aside with a warning naming
it and built again. Builds happen in private `.build-<host>-<pid>-*` folders under <root> and are
renamed into place (the builder has loaded its module already); when two processes race, the
loser discards its copy. Folders left by killed builds are swept before the next build.

The cache is bounded: after a build, the least recently used entries (built modules, and the
files other folders of <root> keep, such as compile records) are removed until they fit the cap;
an entry's mtime is its last use, and a hit touches it. A module's folder is renamed aside before
it is deleted, so a process never sees half an entry, and a module already loaded keeps working;
a process that finds its entry gone between lookup and load builds it again (jit.build).
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
from dataclasses import dataclass
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
    return fields_digest(fields)


def fields_digest(fields) -> str:
    """SHA-256 of the texts `fields`, each prefixed by its length (no two lists collide)."""
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
    """The directory of a complete, intact entry (touched: used now), or None. A damaged entry
    is moved aside with a CacheWarning, so that the caller builds it again."""
    path = entry_dir(root, key)
    identity = _identity(path)
    if identity is None:
        return None
    reason = damage(path)
    if reason is None:
        touch(path)
        return path
    if _identity(path) != identity:
        return None  # evicted, cleared or replaced by another process meanwhile: not damage
    warnings.warn(
        f"the polyimage cache entry {path} is damaged ({reason}); rebuilding it",
        CacheWarning,
        stacklevel=3,
    )
    discard(path)
    return None


def _identity(path: Path):
    """The folder's device and inode, or None when it does not exist."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def write_whole(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` whole: into a temporary file of this writer's own beside it
    (threads and processes writing at once each have theirs), renamed into place, so that a
    reader sees the old file, none, or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise


def touch(entry: Path) -> None:
    """Mark the entry as used now (its folder's mtime), so that eviction keeps it longest."""
    try:
        os.utime(entry)
    except OSError:
        pass  # gone meanwhile, or a read-only cache: its recency matters no more


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
            touch(final)
            return final
        except OSError:
            if damage(final) is None:
                shutil.rmtree(staging, ignore_errors=True)
                return final
            discard(final)  # a damaged or half-deleted entry is in the way
    shutil.rmtree(staging, ignore_errors=True)
    raise OSError(f"cannot install the build into the polyimage cache at {final}")


MODULE = "module"


@dataclass(frozen=True)
class Entry:
    """One entry: a built module's folder (kind MODULE) or a file kept in another folder of the
    cache, such as a compile record (kind: that folder's name); its bytes and last use."""

    path: Path
    kind: str
    size: int
    last_used: float


def entries(root: Path) -> list:
    """Every entry under `root`, least recently used first. Hidden names (builds and writes
    under way, trash) are left out, as are entries that vanish while they are listed."""
    found = []
    for path, kind in _candidates(Path(root)):
        try:
            info = path.stat()
            if kind == MODULE:
                size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            else:
                size = info.st_size
        except OSError:
            continue
        found.append(Entry(path, kind, size, info.st_mtime))
    return sorted(found, key=lambda e: (e.last_used, str(e.path)))


def _candidates(root: Path):
    """(path, kind) of every entry: <root>/<key[:2]>/<key> folders, and the files further down
    other folders."""
    for top in sorted(root.iterdir()) if root.is_dir() else ():
        if top.name.startswith(".") or not top.is_dir():
            continue
        if len(top.name) == 2:
            for path in top.iterdir():
                if path.is_dir() and not path.name.startswith("."):
                    yield path, MODULE
        else:
            for folder, _, names in os.walk(top):
                for name in names:
                    if not name.startswith("."):
                        yield Path(folder) / name, top.name


def remove(entry: Entry) -> None:
    """Remove an entry without disturbing a process that is reading it: a module's folder is
    renamed aside first (discard), a file is unlinked (a reader that opened it keeps it)."""
    if entry.kind == MODULE:
        discard(entry.path)
        return
    try:
        os.unlink(entry.path)
    except OSError:
        pass  # already gone


def evict(root: Path, max_bytes: int, keep=()) -> list:
    """Remove the least recently used entries until the rest fit in `max_bytes`, never one of
    the paths in `keep`; returns the paths removed."""
    listed = entries(root)
    total = sum(e.size for e in listed)
    kept = {Path(p) for p in keep}
    removed = []
    for entry in listed:
        if total <= max_bytes:
            break
        if entry.path in kept:
            continue
        remove(entry)
        total -= entry.size
        removed.append(entry.path)
    return removed


def clear(root: Path) -> int:
    """Remove every entry (as eviction does, safe while other processes use the cache) and any
    leftover trash; returns how many built modules there were. Builds under way are left alone."""
    listed = entries(root)
    for entry in listed:
        remove(entry)
    if Path(root).is_dir():
        sweep(root)
    return sum(e.kind == MODULE for e in listed)
