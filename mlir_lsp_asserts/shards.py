"""A stable split of a run's inputs across CI machines (`--shard K/N`).

A file's shard follows from its path alone: a hash of the path relative to the current folder
(normalized, `/`-separated), modulo N. Adding or removing a model moves no other file to another
shard, every file is in exactly one shard, and all shards together are the whole run.
"""

from __future__ import annotations

import os
import re

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` (1 <= K <= N) as (K, N); ValueError with what is wrong."""
    m = SHARD.match(text)
    if not m:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 2/3 (shard K of N, counted from 1)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K/N needs 1 <= K <= N")
    return k, n


def shard_key(path: str) -> str:
    """The normalized path a file's shard is computed from."""
    if path == "-":
        return path
    rel = os.path.relpath(os.path.abspath(path))
    return os.path.normpath(rel).replace(os.sep, "/")


def shard_of(path: str, n: int) -> int:
    """The shard (1..n) that `path` belongs to."""
    import hashlib  # here: OpenSSL's start-up is a few ms of every unsharded check

    digest = hashlib.sha256(shard_key(path).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def select(paths: list[str], shard: tuple[int, int] | None) -> list[str]:
    """The paths of shard K of N, in their order (all of them without a shard)."""
    if shard is None:
        return list(paths)
    k, n = shard
    return [p for p in paths if shard_of(p, n) == k]
