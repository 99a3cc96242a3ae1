"""A repository's history as Strata learns it (pure: git's text in, commits and learning decisions out;
running git is the caller's, interface/app/learning/).

**One parser.** `parse_log` reads what `git log` prints with LOG_FORMAT and LOG_OPTIONS (the format and
options of ../shared/data/history-dev/extract.py), and a `Commit` is exactly one of extract.py's JSON
records (`Commit.from_record`, `Commit.record`): `strata learn` reading a repository and
ops/eval_history.py reading the history-dev files learn from the same commits. Trailer lines that carry an
e-mail address (Signed-off-by, Co-authored-by, ...) are left out by the parser, as extract.py does.

**What a commit becomes** (`Planner`, in commit order, oldest first):

- skipped (SKIP_REASONS): a merge (its changes are the commits it brings), a commit that touches no file,
  a bot's (dependency bumps, pre-commit.ci, `[automated]` updates: BOT), release bookkeeping (tags, version
  bumps, release announcements: RELEASE), a commit that touches only lockfiles (LOCKFILES), a
  formatting-only commit (its message says so: FORMATTING, or the repository lists it in
  `.git-blame-ignore-revs`), a cherry-pick of a commit already learned (`(cherry picked from commit X)`);
- a revert (`This reverts commit X.`) becomes a **failed tactic**: "Reverted: <what X did>", related to
  X's memory, whose truth the revert lowers (with the revert's sha as evidence);
- every other commit becomes a **change** anchored to the files it touched (MAX_ANCHORS of them, the
  most changed first, each path followed through later renames), its text the subject, the short sha,
  the date and the first files, then the trimmed body;
- a change whose message explains why (`explains_why`: a body whose prose, bullet lists aside, has
  DECISION_WORDS words or more with a reason in it: because, so that, to avoid, instead of, ..., or
  EXPLAINED_WORDS words whatever they are) is a **documented decision**. So is a
  memory an agent wrote anchored to a file (any kind but change). A later commit that rewrites a
  decision's file (deletes at least REWRITE_LINES lines, or a quarter of what the decision added there)
  is recorded as a change of the decision (ChangeRecorded), so a read that finds the decision says it
  was changed since, and by what. Links stay few: a decision takes its first LINKS_PER_DECISION
  changes, a commit changes at most DECISIONS_PER_CHANGE decisions (the latest of its files'), a sweep
  (more than SWEEP_FILES files) neither changes nor makes a decision, and per file only the latest
  DECISIONS_PER_FILE decisions wait for changes.

Memory ids of learned commits come from the repository and the commit's sha (`commit_memory_id`): two
commits with the same message ("Fix typo") are two memories, and learning a commit again finds its
memory. The rules are in docs/LEARNING.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid5

SEP, END = "\x1f", "\x1e"
LOG_FORMAT = f"{END}%H{SEP}%P{SEP}%ct{SEP}%B{SEP}"
"""extract.py's format: record start, sha, parents, committer time, raw message, then --numstat -z."""
LOG_OPTIONS = ("--reverse", "--topo-order", "-M", "--numstat", "-z", f"--format={LOG_FORMAT}")
"""extract.py's options: oldest first, parents before children, renames followed, counts per file."""

EMAIL_LINE = re.compile(r"^.*[\w.+-]+@[\w-]+\.[\w.-]+.*$\n?", re.M)
"""A line with an e-mail address (extract.py's rule): left out of every body."""

_NAMESPACE = UUID("8f0c3d1e-6b2a-4f57-9c41-2d7e5a9b0c63")
"""Fixed forever: learned commits' memory ids (changing it would learn every commit again)."""


# --- the commits ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    added: int | None  # None for a binary file
    deleted: int | None
    old_path: str | None = None  # on a rename only

    @property
    def lines(self) -> int:
        return (self.added or 0) + (self.deleted or 0)


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    time: int  # committer time, Unix seconds
    subject: str
    body: str
    files: tuple[FileChange, ...]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Commit:
        """A commit from one of extract.py's JSON records (a history-dev line)."""
        return cls(
            sha=record["sha"],
            parents=tuple(record["parents"]),
            time=int(record["time"]),
            subject=record["subject"],
            body=record["body"],
            files=tuple(
                FileChange(f["path"], f.get("added"), f.get("deleted"), f.get("old_path")) for f in record["files"]
            ),
        )

    def record(self) -> dict[str, Any]:
        """extract.py's JSON record of this commit."""
        files = []
        for f in self.files:
            entry: dict[str, Any] = {"path": f.path, "added": f.added, "deleted": f.deleted}
            if f.old_path is not None:
                entry["old_path"] = f.old_path
            files.append(entry)
        return {
            "sha": self.sha,
            "parents": list(self.parents),
            "time": self.time,
            "subject": self.subject,
            "body": self.body,
            "files": files,
        }

    @property
    def moment(self) -> datetime:
        return datetime.fromtimestamp(self.time, UTC)

    @property
    def date(self) -> str:
        return self.moment.strftime("%Y-%m-%d")


def parse_log(text: str) -> Iterator[Commit]:
    """The commits of `git log` output made with LOG_FORMAT and LOG_OPTIONS, in the order printed
    (extract.py's reading, record for record)."""
    for chunk in text.split(END)[1:]:
        sha, parents, ct, message, rest = chunk.split(SEP, 4)
        lines = message.strip("\n").split("\n")
        subject, body = lines[0].strip(), EMAIL_LINE.sub("", "\n".join(lines[1:])).strip()
        files = []
        toks = rest.lstrip("\n\x00").split("\x00")
        i = 0
        while i < len(toks):
            t = toks[i].lstrip("\n")
            if not t:
                i += 1
                continue
            parts = t.split("\t")
            if len(parts) != 3:
                i += 1
                continue
            a, d, path = parts
            added, deleted = None if a == "-" else int(a), None if d == "-" else int(d)
            if path == "":  # a rename: old and new paths follow as fields of their own
                if i + 2 >= len(toks):
                    break
                files.append(FileChange(toks[i + 2], added, deleted, toks[i + 1]))
                i += 3
            else:
                files.append(FileChange(path, added, deleted))
                i += 1
        yield Commit(sha, tuple(parents.split()), int(ct), subject, body, tuple(files))


def commit_memory_id(repo_id: str, sha: str) -> UUID:
    """The memory a commit of a repository is learned as (its change, or its revert's failed tactic)."""
    return uuid5(_NAMESPACE, f"git\x1f{repo_id}\x1f{sha.lower()}")


def history_id(repo_id: str, source: str) -> UUID:
    """The learning cursor of one source (`git`) of one repository (domain/learning.py History)."""
    return uuid5(_NAMESPACE, f"history\x1f{source}\x1f{repo_id}")


# --- what is skipped ----------------------------------------------------------------------------------

SKIP_REASONS = ("merge", "empty", "bot", "release", "lockfile", "formatting", "cherry_pick")
"""Why a commit is not learned; a commit learned before is `learned` (not counted as skipped)."""

BOT = re.compile(
    r"^(?:"
    r"(?:build|chore|ci|deps)\((?:deps|deps-dev|dev-deps)\)!?:"  # dependabot / renovate, conventional form
    r"|bump \S+ from \S+ to \S+"  # dependabot's "Bump X from a to b"
    r"|bumps? the \S+ group"
    r"|update dependency \S+ to"  # renovate
    r"|\[pre-commit\.ci\]"
    r"|pre-commit autoupdate"
    r"|\[automated\]"
    r"|\[bot\]"
    r"|auto-?update (?:pre-commit|dependencies)"
    r")",
    re.IGNORECASE,
)
RELEASE = re.compile(
    r"^(?:"
    r"added tag \S+ for changeset"  # converted from Mercurial
    r"|preparing release"
    r"|prepare (?:for )?release"
    r"|(?:bump|update|set|increment) (?:the )?version\b"
    r"|version bump\b"
    r"|release (?:version )?v?\d[\w.-]*\s*$"
    r"|released? v?\d[\w.-]*\s*$"
    r"|v?\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?\s*$"  # a bare version number
    r")",
    re.IGNORECASE,
)
FORMATTING = re.compile(
    r"^(?:"
    r"(?:style|format|fmt)(?:\([^)]*\))?!?:"
    r"|(?:run|ran|running|apply|applied|applying|use|reformat(?:ted)?(?: \w+)?(?: with| using)?)\s+"
    r"(?:black|isort|ruff[- ]format|prettier|autopep8|yapf|gofmt|rustfmt|clang-format|pyupgrade|autoflake)\b"
    r"|(?:black|blacken|isort|prettier)(?:\b|ed\b)"
    r"|(?:re-?format|format)(?:ted|ting)? (?:the )?(?:code|codebase|files?|sources?|everything|all)\b"
    r"|(?:fix(?:ed)?|remove[ds]?|strip(?:ped)?|clean(?:ed)?(?: up)?|trim(?:med)?) (?:trailing |excess |extra )?whitespaces?\b"
    r"|whitespace(?: changes| cleanup| fixes)?\s*$"
    r"|(?:fix(?:ed)?|apply|code) formatting\s*$"
    r"|formatting(?: fixes| changes)?\s*$"
    r"|(?:fix(?:ed)?|apply) (?:lint|linting|flake8|pep8|pylint|pre-commit)(?: errors| issues| warnings| fixes)?\s*$"
    r")",
    re.IGNORECASE,
)
LOCKFILES = frozenset(
    {
        "poetry.lock",
        "pipfile.lock",
        "uv.lock",
        "pdm.lock",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "cargo.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
        "mix.lock",
        "podfile.lock",
        "flake.lock",
    }
)
CHERRY_PICK = re.compile(r"\(cherry picked from commit ([0-9a-f]{7,40})\)", re.IGNORECASE)
REVERTED = re.compile(r"\bThis reverts commit ([0-9a-f]{7,40})", re.IGNORECASE)
REVERT_SUBJECT = re.compile(r'^Revert\s+"(.*)"\s*$|^Revert\s+(.*)$', re.IGNORECASE)


def is_lockfile(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name in LOCKFILES or name.endswith((".lock", "-lock.json", "-lock.yaml", "-lock.yml"))


def skip_reason(commit: Commit, formatting_revs: frozenset[str] = frozenset()) -> str | None:
    """Why a commit is not learned, judged on the commit alone (a cherry-pick also needs to know what
    was learned: Planner), or None."""
    if len(commit.parents) > 1:
        return "merge"
    if not commit.files:
        return "empty"
    subject = commit.subject
    if BOT.search(subject):
        return "bot"
    if RELEASE.search(subject):
        return "release"
    if all(is_lockfile(f.path) for f in commit.files):
        return "lockfile"
    if commit.sha in formatting_revs or FORMATTING.search(subject):
        return "formatting"
    return None


def reverted_sha(commit: Commit) -> str | None:
    """The commit a revert names (git's `This reverts commit <sha>.`), or None."""
    found = REVERTED.search(commit.body)
    return found.group(1).lower() if found else None


def is_revert(commit: Commit) -> bool:
    return reverted_sha(commit) is not None or commit.subject.lower().startswith("revert ")


def cherry_picked_sha(commit: Commit) -> str | None:
    found = CHERRY_PICK.search(commit.body)
    return found.group(1).lower() if found else None


def blame_ignore_revs(text: str) -> frozenset[str]:
    """The shas a `.git-blame-ignore-revs` file lists (a team's own list of formatting commits)."""
    out = set()
    for line in text.splitlines():
        word = line.split("#", 1)[0].strip().lower()
        if re.fullmatch(r"[0-9a-f]{40}", word):
            out.add(word)
    return frozenset(out)


# --- what a learned commit says ----------------------------------------------------------------------

MAX_ANCHORS = 20
"""A commit is anchored to at most this many of its files (the most changed first)."""
FILES_IN_TEXT = 5
"""A memory's text names at most this many of its files (the anchors hold the rest)."""
BODY_CHARS = 1200
"""A body is cut after about this many characters (at a word)."""
DECISION_WORDS = 15
EXPLAINED_WORDS = 30
CHANGE_CONFIDENCE = 0.7
DECISION_CONFIDENCE = 0.8
REVERT_CONFIDENCE = 0.8
"""Truth priors: a commit is what happened, a hypothesis about the code as it is now (a documented
decision a little more: it says why); a revert is strong evidence that what it undid did not work."""
REASON = re.compile(
    r"\b(?:because|so that|since|in order to|otherwise|instead of|rather than|to avoid|avoids?|to prevent|"
    r"prevents?|to ensure|ensures?|to make sure|the reason|reason is|is needed|was needed|we need|needs to|caused|"
    r"causes|due to|breaks?|broke|the problem|the issue|this means|which means|as a result|root cause|workaround|"
    r"so we|so it|would otherwise|must not|should not|never|races?|deadlocks?|hangs?|leaks?|crash(?:es|ed)?|"
    r"fails?|failed|failing|wrong|incorrect(?:ly)?|thus|therefore|hence)\b|, so\b",
    re.IGNORECASE,
)
"""Words that give a reason or name what went wrong: a body of DECISION_WORDS words with one explains why."""
_TRAILER = re.compile(
    r"^(?:signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by|"
    r"change-id|cc|git-svn-id|pr-url|pr-close|differential revision)\s*:.*$",
    re.IGNORECASE | re.MULTILINE,
)
_NOISE = re.compile(
    r"^(?:--HG--|branch\s*:.*|\(cherry picked from commit [0-9a-f]+\)|This reverts commit [0-9a-f]+\.?"
    r"|\* \[pre-commit\.ci\].*|for more information, see https://pre-commit\.ci)\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def trimmed_body(body: str, chars: int = BODY_CHARS) -> str:
    """A body as a memory keeps it: trailers, converted-repository and revert boilerplate left out,
    blank runs collapsed, cut after about `chars` characters."""
    text = _NOISE.sub("", _TRAILER.sub("", body.replace("\r", "")))
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    text = "\n".join(p for p in paragraphs if p)
    if len(text) > chars:
        cut = text.rfind(" ", chars - 80, chars)
        text = text[: cut if cut > 0 else chars].rstrip() + " …"
    return text


_BULLET = re.compile(r"^\s*(?:[*+\-]|\d+[.)])\s")


def explains_why(commit: Commit) -> bool:
    """A documented decision: the message explains, in prose (not a squashed list of bullet points), at
    DECISION_WORDS words with a reason in them, or at EXPLAINED_WORDS words whatever they are."""
    prose = " ".join(p for p in trimmed_body(commit.body).split("\n") if not _BULLET.match(p))
    words = len(prose.split())
    return words >= EXPLAINED_WORDS or (words >= DECISION_WORDS and REASON.search(prose) is not None)


def _files_phrase(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:FILES_IN_TEXT])
    more = len(paths) - FILES_IN_TEXT
    return shown + (f" +{more} more" if more > 0 else "")


def change_text(commit: Commit, paths: Sequence[str]) -> str:
    """A learned change: what it did, which commit and when, where, and why (its body)."""
    head = f"{commit.subject} (commit {commit.sha[:10]}, {commit.date}; {_files_phrase(paths)})"
    body = trimmed_body(commit.body)
    return f"{head}\n{body}" if body else head


def reverted_subject(commit: Commit) -> str:
    """What a revert undid, in the reverted commit's words where the subject quotes them."""
    found = REVERT_SUBJECT.match(commit.subject)
    if found:
        return (found.group(1) or found.group(2) or "").strip() or commit.subject
    return commit.subject


def revert_text(commit: Commit, paths: Sequence[str], reverted: str | None) -> str:
    """A learned failed tactic: what was tried and undone, by which commit and when, and why."""
    undone = f" reverting {reverted[:10]}" if reverted else ""
    head = (
        f"Reverted: {reverted_subject(commit)} (commit {commit.sha[:10]}{undone}, {commit.date}; "
        f"{_files_phrase(paths)})"
    )
    body = trimmed_body(commit.body)
    return f"{head}\n{body}" if body else head


# --- renames ------------------------------------------------------------------------------------------


def current_paths(commits: Sequence[Commit], renames: Mapping[str, str] | None = None) -> list[list[FileChange]]:
    """Each commit's files, most changed first, each under its path after every later rename in
    `commits` (and then through `renames`: old path -> new path, renames learned before): a commit is
    anchored to where its code is now, not where it was."""
    later: dict[str, str] = {}
    out: list[list[FileChange]] = []

    def now(path: str) -> str:
        path = later.get(path, path)
        seen = {path}
        while renames and path in renames:  # earlier learns' renames (a chain; never a cycle)
            path = renames[path]
            if path in seen:
                break
            seen.add(path)
        return path

    for commit in reversed(commits):
        files = sorted(commit.files, key=lambda f: -f.lines)
        out.append([FileChange(now(f.path), f.added, f.deleted, f.old_path) for f in files])
        for f in commit.files:
            if f.old_path is not None and f.old_path != f.path:
                later[f.old_path] = later.get(f.path, f.path)
    out.reverse()
    return out


# --- decisions and their changes -------------------------------------------------------------------

SWEEP_FILES = 20
"""A commit touching more files is a sweep: it neither makes a decision nor changes one."""
REWRITE_LINES = 3
"""A later commit rewrites a decision's file when it deletes at least this many of its lines (or a
quarter of what the decision added there, when that is less)."""
LINKS_PER_DECISION = 3
DECISIONS_PER_CHANGE = 2
DECISIONS_PER_FILE = 3


@dataclass
class Decision:
    """A memory waiting for the changes that rewrite what it touched (kept per path, domain/learning.py)."""

    memory_id: str
    path: str
    added: int  # lines it added to the path (a learned decision), or 0 (an agent's anchored memory)
    time: int  # when it was made (the commit's time, or the agent memory's)
    links: int = 0  # changes recorded on it so far

    def as_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "path": self.path, "added": self.added, "time": self.time}


def rewrites(decision: Decision, change: FileChange) -> bool:
    deleted = change.deleted or 0
    if decision.added > 0:
        return deleted >= min(REWRITE_LINES, max(1, decision.added // 4))
    return deleted >= REWRITE_LINES


@dataclass
class Step:
    """What one commit becomes."""

    commit: Commit
    skip: str | None = None
    kind: str = "change"  # change | failed_tactic
    memory_id: str = ""
    text: str = ""
    paths: list[str] = field(default_factory=list)  # anchors, most changed first
    confidence: float = CHANGE_CONFIDENCE
    decision: bool = False
    reverts: str | None = None  # the reverted commit's memory id, when it was learned
    reverted_sha: str | None = None
    changes: list[str] = field(default_factory=list)  # decisions' memory ids it changes
    waits: list[Decision] = field(default_factory=list)  # as a decision: what it waits for changes on


@dataclass
class Planner:
    """Decides, commit by commit in order, what each becomes, keeping the decisions that wait for
    changes (`waiting`: path -> decisions, oldest first) current as it goes. Pure: `learned` says
    whether a sha is a memory already (from an earlier learn), `agent` lists the agents' anchored
    memories per path (domain/learning.py and the use case supply both)."""

    repo_id: str
    waiting: dict[str, list[Decision]]
    learned: Callable[[str], bool]
    agent: Mapping[str, Sequence[Decision]] = field(default_factory=dict)
    formatting_revs: frozenset[str] = frozenset()
    shas: dict[str, str] = field(default_factory=dict)
    """Full shas learned in this plan by their prefixes' owner (a revert names a sha, often abbreviated)."""
    linked: dict[str, int] = field(default_factory=dict)
    """Changes recorded on each decision in this plan (the agent memories' earlier ones are in `agent`)."""

    def plan(self, commits: Sequence[Commit], renames: Mapping[str, str] | None = None) -> list[Step]:
        steps = []
        for commit, files in zip(commits, current_paths(commits, renames), strict=True):
            steps.append(self.step(commit, files))
        return steps

    def _known(self, sha: str) -> str | None:
        """The full sha of a learned commit a message names (maybe abbreviated), or None."""
        if len(sha) == 40:
            return sha if sha in self.shas or self.learned(sha) else None
        found = [full for full in self.shas if full.startswith(sha)]
        return found[0] if len(found) == 1 else None

    def step(self, commit: Commit, files: list[FileChange]) -> Step:
        step = Step(commit, skip=skip_reason(commit, self.formatting_revs))
        if step.skip is not None:
            return step
        if self.learned(commit.sha):  # learned before: its memory and links are there already
            step.skip = "learned"
            return step
        picked = cherry_picked_sha(commit)
        if picked is not None and self._known(picked) is not None:
            step.skip = "cherry_pick"
            return step
        step.memory_id = str(commit_memory_id(self.repo_id, commit.sha))
        step.paths = list(dict.fromkeys(f.path for f in files))[:MAX_ANCHORS]
        self.shas[commit.sha] = step.memory_id
        if is_revert(commit):
            step.kind, step.confidence = "failed_tactic", REVERT_CONFIDENCE
            named = reverted_sha(commit)
            full = self._known(named) if named else None
            step.reverted_sha = full or named
            step.reverts = str(commit_memory_id(self.repo_id, full)) if full else None
            step.text = revert_text(commit, step.paths, step.reverted_sha)
            return step
        step.text = change_text(commit, step.paths)
        if len(commit.files) <= SWEEP_FILES:
            step.changes = self._changed_decisions(commit, files)
            if explains_why(commit):
                step.decision, step.confidence = True, DECISION_CONFIDENCE
                for f in files:
                    if (f.added or 0) > 0:
                        step.waits.append(Decision(step.memory_id, f.path, f.added or 0, commit.time))
                        self._wait(step.waits[-1])
        return step

    def _changed_decisions(self, commit: Commit, files: list[FileChange]) -> list[str]:
        """The decisions this commit rewrites: for each file it rewrites (most deleted first), the
        latest decision on it that still takes changes and was made before it."""
        found: list[str] = []
        for f in sorted(files, key=lambda f: -(f.deleted or 0)):
            candidates = [*self.waiting.get(f.path, ()), *self.agent.get(f.path, ())]
            candidates.sort(key=lambda d: -d.time)
            for d in candidates:
                if len(found) >= DECISIONS_PER_CHANGE:
                    return found
                if d.memory_id in found or (d.time >= commit.time and d.added == 0):
                    continue  # an agent's memory is changed only by commits made after it
                if self.linked.get(d.memory_id, d.links) >= LINKS_PER_DECISION or not rewrites(d, f):
                    continue
                found.append(d.memory_id)
                self.linked[d.memory_id] = self.linked.get(d.memory_id, d.links) + 1
                if self.linked[d.memory_id] >= LINKS_PER_DECISION:
                    self._close(d.memory_id)
                break
        return found

    def __post_init__(self) -> None:
        self._where: dict[str, set[str]] = {}  # a waiting decision -> the paths it waits on
        for path, queue in self.waiting.items():
            for d in queue:
                self._where.setdefault(d.memory_id, set()).add(path)

    def _wait(self, decision: Decision) -> None:
        queue = self.waiting.setdefault(decision.path, [])
        queue.append(decision)
        self._where.setdefault(decision.memory_id, set()).add(decision.path)
        del queue[:-DECISIONS_PER_FILE]

    def _close(self, memory_id: str) -> None:
        """A decision that took its changes stops waiting, on every path it waits on."""
        for path in self._where.pop(memory_id, ()):
            queue = [d for d in self.waiting.get(path, ()) if d.memory_id != memory_id]
            if queue:
                self.waiting[path] = queue
            else:
                self.waiting.pop(path, None)


def counts(steps: Iterable[Step]) -> dict[str, int]:
    """What a plan learns and skips, by kind and by reason."""
    out: dict[str, int] = {}
    for step in steps:
        key = f"skipped_{step.skip}" if step.skip else step.kind
        out[key] = out.get(key, 0) + 1
    return out


# --- ranking files from what a read recalled -------------------------------------------------------

COCHANGE_WEIGHT = 1.0
"""How much the files that changed together with the voted files add, against the votes themselves
(each side scaled to its best file first): FileStats.cochange."""
NAMED_WEIGHT = 2.0
"""What a file of code the problem names by its path (`named_files`) adds to its score,
against the votes and the co-changed files (each scaled to its best file first): more than either, so a
named file the recalled memories vote for at all comes first, and one they do not still joins them."""
CODE_SUFFIXES = frozenset(
    {".py", ".pyx", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".go", ".rs",
     ".java", ".kt", ".scala", ".rb", ".php", ".cs", ".swift", ".m", ".sh", ".lua", ".ex", ".exs", ".erl", ".hs",
     ".ml", ".clj", ".dart", ".jl", ".r", ".sql", ".vue", ".svelte"}
)  # fmt: skip
NOT_CODE_FOLDERS = frozenset(
    {"test", "tests", "testing", "spec", "specs", "__tests__", "doc", "docs", "example", "examples", "benchmarks",
     "bench", "asv_bench"}
)  # fmt: skip


def named_files(text: str, paths: Iterable[str]) -> list[str]:
    """The files of code (`is_code`) among `paths` that a text names by their path, one folder at least, where
    a path may start (`requests/sessions.py`; also the end of a traceback's `.../site-packages/requests/
    sessions.py` or a link's `.../blob/<sha>/pylint/lint/run.py#L34`), in the order of `paths`. A bare file
    name (`sessions.py`, `core.py`) is not enough: other repositories' problems name such files too; a dotted
    module (`requests.sessions`) was measured and gained nothing (docs/LEARNING.md "Files from a read")."""
    return [path for path in paths if "/" in path and is_code(path) and _names_path(text, path)]


def _names_path(text: str, path: str) -> bool:
    at = text.find(path)
    while at >= 0:
        end = at + len(path)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_-.") and not (after.isalnum() or after == "_"):
            return True
        at = text.find(path, at + 1)
    return False


def is_code(path: str) -> bool:
    """A file of code, not a test, a document, an example or a benchmark: its suffix is a language's, no
    folder on its path is a test, doc, example or benchmark folder, and its name is not a test's
    (`test_*`, `*_test.*`, `*.test.*`, `*.spec.*`, `conftest.py`)."""
    parts = path.lower().split("/")
    name = parts[-1]
    stem, dot, suffix = name.rpartition(".")
    if not dot or f".{suffix}" not in CODE_SUFFIXES or any(p in NOT_CODE_FOLDERS for p in parts[:-1]):
        return False
    return not (
        name.startswith(("test_", "tests_"))
        or stem in ("test", "tests", "conftest")
        or stem.endswith(("_test", "_tests", ".test", ".spec"))
    )


@dataclass(frozen=True)
class FileStats:
    """What the store's anchored memories say about a repository's files: which memories name each file
    (`postings`: path -> indices into `memories`), so how many (`changes`) and which files changed with it.
    Built from the anchors' paths (projections/anchors.py file_stats), one tuple per memory."""

    memories: tuple[tuple[str, ...], ...]
    postings: Mapping[str, tuple[int, ...]]

    @classmethod
    def of(cls, memories: Iterable[Sequence[str]]) -> FileStats:
        kept = tuple(t for t in (tuple(dict.fromkeys(paths)) for paths in memories) if t)
        postings: dict[str, list[int]] = {}
        for i, paths in enumerate(kept):
            for path in paths:
                postings.setdefault(path, []).append(i)
        return cls(kept, {path: tuple(found) for path, found in postings.items()})

    @property
    def total(self) -> int:
        return len(self.memories)

    def changes(self, path: str) -> int:
        return len(self.postings.get(path, ()))

    def rarity(self, path: str) -> float:
        """log(1 + memories / memories naming the file), as BM25 weighs a word."""
        return math.log(1.0 + self.total / max(self.changes(path), 1))

    def together(self, path: str) -> dict[str, float]:
        """The files that changed with `path`, each by the share of `path`'s memories that name it, a
        memory of n files counting 1 / (n - 1) for each of the others (a sweep says little of any pair)."""
        found = self.postings.get(path, ())
        out: dict[str, float] = {}
        for i in found:
            paths = self.memories[i]
            if len(paths) < 2:
                continue
            share = 1.0 / (len(paths) - 1) / len(found)
            for other in paths:
                if other != path:
                    out[other] = out.get(other, 0.0) + share
        return out

    def cochange(self, votes: Mapping[str, float]) -> dict[str, float]:
        """The files that changed with the voted ones: each voted file passes its share of the votes on to
        the files that changed with it (`together`)."""
        whole = sum(votes.values())
        out: dict[str, float] = {}
        if whole <= 0:
            return out
        for path, vote in votes.items():
            for other, share in self.together(path).items():
                out[other] = out.get(other, 0.0) + vote / whole * share
        return out


def _scaled(scores: Mapping[str, float]) -> dict[str, float]:
    best = max(scores.values(), default=0.0)
    return {path: score / best for path, score in scores.items()} if best > 0 else {}


def rank_files(
    results: Iterable[Sequence[str]],
    exists: Callable[[str], bool] | None = None,
    changes: Callable[[str], int] | None = None,
    total: int = 0,
    stats: FileStats | None = None,
    named: Iterable[str] = (),
) -> list[str]:
    """Files ranked from a read's answer: each memory, in the answer's order, is a vote for the files
    it is anchored to, worth 1 / its rank, split over its files as 1 / sqrt(their number) each (a
    commit of one file says more about that file than a sweep of twenty says about each). Ties keep
    the order in which files first appear. `exists` drops files that are no longer there.

    With `changes` (how many of the `total` learned commits changed a file), each vote is weighted by
    how rare the file is, log(1 + total / changes), as BM25 weighs a word: a changelog or a test module
    that half the commits touch says little about where a particular change belongs.

    With `stats` (what the store's anchored memories say of the files: FileStats), the ranking uses more
    of what the store learned: the votes are weighted by `stats`' file rarity; the files that changed
    together with the voted ones join them (FileStats.cochange, each side scaled to its best file, the
    co-changed side weighing COCHANGE_WEIGHT), so a file no recalled memory names can still come first
    when the recalled ones keep changing with it; and code comes first (`is_code`), then the tests,
    documents and notes, each part by its score: the change an agent looks for is in the code, and its
    tests and notes follow it.

    `named` (the files the problem names, `named_files`) each add NAMED_WEIGHT to their score, with `stats`
    and only when the read recalled something: a problem that recalls nothing relevant still gets no files."""
    votes: dict[str, float] = {}
    for rank, paths in enumerate(results, start=1):
        unique = list(dict.fromkeys(paths))
        if not unique:
            continue
        share = 1.0 / rank / len(unique) ** 0.5
        for path in unique:
            if stats is not None:
                weight = stats.rarity(path)
            elif changes is not None and total:
                weight = math.log(1.0 + total / max(changes(path), 1))
            else:
                weight = 1.0
            votes[path] = votes.get(path, 0.0) + share * weight
    if stats is None:
        scores = votes
    else:
        scores = _scaled(votes)
        for path, score in _scaled(stats.cochange(votes)).items():
            scores[path] = scores.get(path, 0.0) + COCHANGE_WEIGHT * score
        if votes:
            for path in named:
                scores[path] = scores.get(path, 0.0) + NAMED_WEIGHT
    if exists is not None:
        scores = {path: score for path, score in scores.items() if exists(path)}
    order = {path: i for i, path in enumerate(scores)}
    if stats is not None:
        code = {path: is_code(path) for path in scores}
        return sorted(scores, key=lambda p: (not code[p], -scores[p], order[p]))
    return sorted(scores, key=lambda p: (-scores[p], order[p]))
