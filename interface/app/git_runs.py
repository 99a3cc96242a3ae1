"""git, as Strata runs it in a repository someone else may have made (`strata learn`, which the stop hook
starts in whatever repository a session is in; the commit a write's anchors record).

A `.git` folder that came from elsewhere (an archive, a copied checkout) holds a config Strata did not
write, and git runs commands that config names. Strata's git calls read history only (`log --numstat`,
`rev-parse`, `rev-list`, `merge-base`, `cat-file`, `show` of a blob), which run no hook, pager,
fsmonitor, textconv or external diff; but a config that makes the repository a partial clone with a
promisor remote makes git fetch a missing object on demand, and the fetch runs `core.sshCommand` (or
any transport's helper) — a command of the config's choosing. So every call here runs with:

- `GIT_NO_LAZY_FETCH=1`: no object is fetched on demand (git 2.39.4 and later; a missing object is an
  error, `git_failed`);
- `GIT_ALLOW_PROTOCOL` empty: no transport at all (for a git without the variable above: since 2.12);
- `GIT_TERMINAL_PROMPT=0`, `GIT_OPTIONAL_LOCKS=0`: no prompt for credentials, no index refresh written;
- `-c core.fsmonitor=false`: should a call ever read the index, the config's fsmonitor command is not run;
- `--no-textconv --no-ext-diff` on `log` and `show` (Git.log, Git.formatting_revs).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

OPTIONS = ("-c", "core.fsmonitor=false")
"""Before the subcommand: configuration given on the command line wins over the repository's."""

ENVIRONMENT = {
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}


def run(root: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` in the working tree `root`, its output captured (bytes), with OPTIONS and ENVIRONMENT;
    a failing git is the caller's to read from the return code (OSError and TimeoutExpired raise)."""
    return subprocess.run(
        ["git", *OPTIONS, "-C", str(root), *args],
        capture_output=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **ENVIRONMENT},
    )
