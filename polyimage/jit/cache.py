"""Content-addressed disk cache of built modules, installed atomically.

Layout: <root>/<key[:2]>/<key>/{kernel.c, <module>.so, build.log, meta.json}. A build happens in
a private temporary directory under <root> and is renamed into place; when two processes race,
the loser discards its copy and loads the winner's.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from ..version import __version__


def cache_key(source: str, compiler: str, fingerprint: str, flags: tuple) -> str:
    """SHA-256 over length-prefixed fields: source, compiler, its version, flags, versions."""
    fields = [source, compiler, fingerprint, " ".join(flags), __version__,
              sys.implementation.cache_tag, sysconfig.get_config_var("EXT_SUFFIX") or ""]
    digest = hashlib.sha256()
    for text in fields:
        data = text.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def entry_dir(root: Path, key: str) -> Path:
    return Path(root) / key[:2] / key


def lookup(root: Path, key: str):
    """The directory of a complete entry, or None."""
    path = entry_dir(root, key)
    return path if (path / "meta.json").is_file() else None


def staging_dir(root: Path) -> Path:
    Path(root).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".build-", dir=root))


def install(staging: Path, root: Path, key: str, meta: dict) -> Path:
    """Move a finished build into place; returns the entry that is in place afterwards."""
    (staging / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    final = entry_dir(root, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if lookup(root, key) is None:
            raise
    return final


def clear(root: Path) -> int:
    """Delete every entry; returns how many there were."""
    root = Path(root)
    entries = [p for p in root.glob("??/*") if p.is_dir()] if root.is_dir() else []
    for p in entries:
        shutil.rmtree(p, ignore_errors=True)
    return len(entries)
