"""Readable terminal views of the contract models (JSON is the default when output is piped)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strata_recall.interface.app.visible import one_line

if TYPE_CHECKING:  # annotations only: a command imports the contracts of its own answer
    from strata_recall.schemas.edit import EditResponse
    from strata_recall.schemas.errors import ErrorResponse
    from strata_recall.schemas.feedback import FeedbackResponse
    from strata_recall.schemas.files import FilesResponse
    from strata_recall.schemas.forget import ForgetResponse
    from strata_recall.schemas.operator import (
        LogResponse,
        RecordedResponse,
        TokenCreateResponse,
        TokenListing,
        TokenListResponse,
        TokenRevokeResponse,
    )
    from strata_recall.schemas.read import CaseMember, ReadResponse
    from strata_recall.schemas.update import UpdateResponse, ValueChange
    from strata_recall.schemas.write import ImportResponse, WriteResponse


def _lines(text: str, indent: str) -> str:
    """A memory's text whose lines after the first are indented under it: none starts where this view's
    own lines start, so a text cannot pass for a value or an entry of the view (control characters are
    escaped for every view: interface/app/visible.py, at the CLI's output)."""
    return text.replace("\n", "\n" + indent)


def write(r: WriteResponse) -> str:
    review = "  (pending review)" if r.needs_review else ""
    lines = [f"{r.outcome} {r.resolved.kind} ({r.resolved.scope}) {r.memory_id}{review}", f"position {r.position}"]
    if r.redactions:
        lines.append(f"{r.redactions} secret(s) redacted before recording")
    if r.merged is not None:
        lines.append(
            f"a near-duplicate (similarity {r.merged.similarity:.3f}) of {r.memory_id}: reinforced it "
            f"(undo: strata unmerge {r.memory_id} {r.merged.duplicate_id})"
        )
    lines += [f"similar: {m.memory_id} {m.kind} ({m.similarity:.2f}) {m.text}" for m in r.similar]
    return "\n".join(lines)


def _change(name: str, c: ValueChange | None) -> list[str]:
    if c is None:
        return []
    return [f"{name}: {c.before:.3f} -> {c.after:.3f}  (weight {c.weight:.2f}; {c.note})"]


def update(r: UpdateResponse) -> str:
    lines = [f"{r.mode} {r.memory_id}"]
    lines += _change("truth", r.truth)
    if r.utility is not None:
        ctx = r.utility.context_problem_id or "no problem context"
        lines += _change(f"utility for {ctx}", r.utility)
        lines.append(f"global utility: {r.utility.global_before:.3f} -> {r.utility.global_after:.3f}")
    if r.position is not None:
        lines.append(f"position {r.position}")
    return "\n".join(lines)


def forget(r: ForgetResponse) -> str:
    return f"forgot {r.memory_id}" if r.forgotten else f"{r.memory_id} was already forgotten"


def edit(r: EditResponse) -> str:
    if not r.edited:
        return f"{r.memory_id} already says this: nothing recorded"
    redacted = f", {r.redactions} redaction(s)" if r.redactions else ""
    return f"edited {r.memory_id}{redacted}, position {r.position}\n  {r.text}"


def imported(r: ImportResponse) -> str:
    return (
        f"imported {r.lines} line(s): {r.created} created, {r.reinforced} reinforced, "
        f"{r.redactions} redaction(s), position {r.position}"
    )


def error(r: ErrorResponse) -> str:
    lines = []
    for e in r.errors:
        where = f" [{e.path}]" if e.path else ""
        lines.append(f"error ({e.code}){where}: {e.message}")
    return "\n".join(lines)


def show(view: dict[str, Any]) -> str:
    m = view["memory"]
    written_in = f", repo {m['repo_id']}" if m["repo_id"] else ""
    lines = [
        f"{m['kind']} ({m['scope']}{written_in}) {m['memory_id']}  [{m['status']}]",
        f"  {_lines(m['text'], '    ')}",
        f"  truth {m['truth']:.3f}  utility {m['utility']:.3f}  maturity {m['maturity']}  "
        f"validations {m['validations']}  reinforcements {m['reinforcements']}",
    ]
    lines += [f"  utility for problem {problem}: {value:.3f}" for problem, value in m["utility_by_problem"].items()]
    if m["problem_ids"]:
        lines.append(f"  problem: {', '.join(m['problem_ids'])}")
    for change in m["change_chain"]:
        lines.append(f"  changed by {change['change_memory_id']}: {change['summary']}")
    lines.append("history:")
    lines += [f"  {_event_line(e)}" for e in view["history"]]
    return "\n".join(lines)


def events(records: list[dict[str, Any]]) -> str:
    return "\n".join(_event_line(e) for e in records) or "(the log is empty)"


def _event_line(e: dict[str, Any]) -> str:
    f = e["fields"]
    if e.get("withheld"):
        effect = f" -> {f['target']} (weight {f['weight']:.2f})" if "target" in f else ""
        effect += f" {f['decision']}" if "decision" in f else ""
        where = f"#{e['position']} " if "position" in e else ""
        return f"{where}{e['timestamp'][:19]} {e['type']} {e['memory_id'][:8]} v{e['version']}{effect} [withheld: {e['withheld']}]"
    detail = {
        "MemoryWritten": lambda: f"{f['kind']}/{f['scope']} {f['text'][:60]!r}",
        "TruthAdjusted": lambda: f"{f['source']} -> {f['target']} (weight {f['weight']:.2f})",
        "UtilityObserved": lambda: f"-> {f['target']} for {f['problem_id'] or 'no problem'} (weight {f['weight']:.2f})",
        "ChangeRecorded": lambda: f"by {f['change_memory_id']}",
        "MemoryForgotten": lambda: f"reason {f['reason']!r}",
        "MemoryReviewed": lambda: f"{f['decision']} by {f['reviewer'] or 'someone'} {f['note']!r}",
        "AnchorsRecorded": lambda: ", ".join(
            one_line(a["path"] + (f"#{a['symbol']}" if a.get("symbol") else "")) for a in f["anchors"]
        ),
        "DuplicateMerged": lambda: f"{f['duplicate_id']} (similarity {f['similarity']:.3f}) {f['text'][:60]!r}",
        "DuplicateUnmerged": lambda: f"{f['duplicate_id']} {f['reason']!r}",
        "MemoryArchived": lambda: f"reason {f['reason']!r}",
        "TextEdited": lambda: f"now {f['text'][:60]!r} {f['rationale']!r}",
        "MemoryRestored": lambda: f"reason {f['reason']!r}",
        "Learned": lambda: (
            f"from {f['source']} {f['ref'][:12] if f['source'] == 'git' else f['ref']} of {f['occurred_at'][:10]}"
        ),
        "Advanced": lambda: f"learned through {(f['head'] or '')[:12]}: {f['read']} commits read",
        "RulesRecorded": lambda: "; ".join(f"{path}: {len(rules)} rules" for path, rules in f["files"].items()),
    }.get(e["type"], lambda: "")()
    where = f"#{e['position']} " if "position" in e else ""
    return f"{where}{e['timestamp'][:19]} {e['type']} {e['memory_id'][:8]} v{e['version']} {detail}"


def projections(view: dict[str, Any]) -> str:
    lines = [f"log head {view['head']}", f"{'projection':<10} {'position':>9} {'lag':>7} {'rows':>9}  last error"]
    for name, p in view["projections"].items():
        error = f"{p['last_error']} (at {p['error_position']})" if p["last_error"] else "-"
        lines.append(f"{name:<10} {p['position']:>9} {p['lag']:>7} {p['rows']:>9}  {error}")
    return "\n".join(lines)


def read(r: ReadResponse) -> str:
    lines = []
    if r.archetype is not None:
        lines.append(f"archetype {r.archetype.name} (similarity {r.archetype.similarity:.2f})")
    if not r.results:
        lines.append("nothing relevant (an empty answer is a fine answer)")
    for i, m in enumerate(r.results, start=1):
        lines += _recalled(f"{i:>2}. [{m.kind}/{m.scope}] ", m, "    ")
        for label, members in (("solution", m.solutions), ("failed tactic", m.failed_tactics)):
            for member in members:
                lines += _recalled(f"    - {label}: ", member, "      ")
    if r.suppressed:
        lines.append("held back: " + ", ".join(f"{n} {k}" for k, n in sorted(r.suppressed.items())))
    lines.append(f"read {r.read_id} at position {r.position}")
    lines.append(r.guidance)
    return "\n".join(lines)


def files(r: FilesResponse) -> str:
    if not r.files:
        return "no files: nothing relevant was recalled, or its memories name no files"
    lines = []
    for i, f in enumerate(r.files, start=1):
        why = f"memories {', '.join(m[:8] for m in f.memory_ids)}" if f.memory_ids else "changes with those files"
        lines.append(f"{i:>2}. {one_line(f.path)}  ({why})")
    lines.append(f"from read {r.read_id} ({r.memories} memories) at position {r.position}")
    return "\n".join(lines)


def _recalled(lead: str, m: CaseMember, indent: str) -> list[str]:
    """One recalled memory: its text, why it came, its values, its caution and change chain."""
    lines = [
        f"{lead}{_lines(m.text, indent + '  ')}",
        f"{indent}why: {m.retrieval_reason}  relevance {m.relevance:.2f}  truth {m.truth:.2f}  "
        f"utility {m.utility:.2f}  {m.maturity}  id {m.memory_id}",
    ]
    if m.note:
        lines.append(f"{indent}caution: {m.note}")
    lines += [f"{indent}changed by: {change.text}" for change in m.change_chain]
    lines += [
        f"{indent}anchored code changed since: {key} (check it before relying on this)" for key in m.anchor_changed
    ]
    lines += [f"{indent}anchored code is gone: {key}" for key in m.anchor_missing]
    return lines


def archetypes(view: dict[str, Any]) -> str:
    lines = [f"archetypes from the {view['source']}:"]
    for a in view["archetypes"]:
        avg = f"{a['average_similarity']:.2f}" if a["average_similarity"] is not None else "-"
        lines.append(f"  {a['name']:<16} matches {a['matches']:>5}  avg similarity {avg}  {a['description']}")
    return "\n".join(lines)


def feedback(r: FeedbackResponse) -> str:
    lines = [
        f"{c.memory_id}: utility {c.utility.before:.3f} -> {c.utility.after:.3f} ({c.utility.note})" for c in r.credited
    ]
    lines.append(f"this session has moved {r.session_moved} of at most {r.session_limit} memories")
    return "\n".join(lines)


def pending(view: dict[str, Any]) -> str:
    if not view["pending"]:
        return "nothing is waiting for review"
    return "\n".join(
        f"{m['memory_id']}  {m['repo_id'] or '-'} {m['kind']}/{m['scope']}: {m['text'][:100]}" for m in view["pending"]
    )


def doctor(view: dict[str, Any]) -> str:
    lines = [f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}" for c in view["checks"]]
    lines.append("all checks passed" if view["ok"] else "some checks failed: see FAIL above")
    return "\n".join(lines)


def reflection(result: dict[str, Any]) -> str:
    """`strata reflect`'s report."""
    lines = []
    for r in result["reports"]:
        where = f"repo {r['repo_id']}" if r["repo_id"] is not None else "the global pool"
        lines.append(
            f"{where}: {r['memories']} active memories, {len(r['actions'])} action(s)"
            + ("" if not r["actions"] else " recorded" if r["applied"] else " (dry run)")
        )
        lines += [f"  archive {a['memory_id']} ({a['finding']}): {a['text']}  -- {a['reason']}" for a in r["archive"]]
        for g in r["duplicates"]:
            lines.append(f"  keep {g['keep']['memory_id']}: {g['keep']['text']}")
            lines += [f"    merge {m['memory_id']} ({m['similarity']:.3f}): {m['text']}" for m in g["merge"]]
        for f in r["failed_tactics_solved"]:
            lines.append(f"  link failed tactic {f['memory_id']} -> solution {f['solution_id']}: {f['text']}")
    if any(r["actions"] and not r["applied"] for r in result["reports"]):
        lines.append("dry run: nothing recorded (add --apply to record these actions)")
    return "\n".join(lines)


def _rules_learned(i: dict[str, Any] | None) -> str:
    """The instruction files' line of `strata learn`'s summary."""
    if i is None:
        return ""
    if not i["paths"] and not i["unread"]:
        return "  instruction files: none found"
    made = ", ".join(f"{n:,} {kind}s" for kind, n in sorted(i["written"].items())) or "nothing new"
    done = [f"{i['rules']:,} rules in {', '.join(i['paths']) or 'no file'}: wrote {made}"]
    done += [f"{n:,} {what}" for what, n in (("edited", i["edited"]), ("removed", i["removed"])) if n]
    done += [f"{i['kept']:,} as they were"] if i["kept"] else []
    unread = f"; not read: {', '.join(i['unread'])}" if i["unread"] else ""
    return "  instruction files: " + "; ".join(done) + unread


def _sessions_captured(c: dict[str, Any] | None) -> str:
    """The sessions' line of `strata learn`'s summary (--sessions, --transcript)."""
    if c is None:
        return ""
    made = ", ".join(f"{n:,} {kind}s" for kind, n in sorted(c["written"].items())) or "nothing new"
    names = {"claude_code": "Claude Code", "codex": "Codex"}
    clients = ", ".join(f"{n:,} {names.get(k, k)}" for k, n in sorted((c.get("clients") or {}).items()) if n)
    read = f"{c['transcripts']:,} transcripts read" + (f" ({clients})" if clients else "")
    done = [read, f"{c['pairs']:,} checks failed then passed after edits"]
    done += [f"wrote {made}" + (f" ({c['pending']:,} pending review)" if c["pending"] else "")]
    done += [f"{c['credited']:,} shown memories credited"] if c["credited"] else []
    done += [f"{c['already']:,} captured before"] if c["already"] else []
    skipped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in sorted(c["skipped"].items()))
    refused = ", ".join(f"{n:,} {code}" for code, n in sorted(c["refused"].items()))
    return (
        "  sessions: "
        + "; ".join(done)
        + (f"; skipped: {skipped}" if skipped else "")
        + (f"; refused: {refused}" if refused else "")
    )


def learned(r: dict[str, Any]) -> str:
    """The summary of `strata learn`."""
    head = (r["head"] or "")[:12]
    rules = "\n".join(
        line for line in (_rules_learned(r.get("instructions")), _sessions_captured(r.get("sessions"))) if line
    )
    if r["nothing_new"]:
        said = f"{r['repo_id']}: nothing new since {head} (learned already)" if head else f"{r['repo_id']}:"
        if rules:
            said += "\n" + rules
        if r["position"] is not None:
            said += f"\n  {'searchable' if r['searchable'] else 'searchable once the projections catch up'}; "
            said += f"log position {r['position']}"
        return said
    made = ", ".join(f"{n:,} {kind.replace('_', ' ')}s" for kind, n in sorted(r["learned"].items())) or "nothing"
    lines = [f"{r['repo_id']}: read {r['read']:,} commits ({r['range']}) through {head}; wrote {made}"]
    if r["decisions"] or r["links"]:
        lines.append(f"  {r['decisions']:,} documented decisions; {r['links']:,} later changes recorded on decisions")
    if r["reverted"]:
        lines.append(f"  {r['reverted']:,} reverted changes lowered")
    skipped = ", ".join(f"{n:,} {reason.replace('_', '-')}" for reason, n in sorted(r["skipped"].items()))
    if skipped:
        lines.append(f"  skipped: {skipped}")
    if r["already_learned"]:
        lines.append(f"  {r['already_learned']:,} learned before, left as they were")
    if r["archived"]:
        lines.append(f"  {r['archived']:,} memories of commits no longer in the history archived (a rewrite)")
    if r["reanchored"]:
        lines.append(f"  {r['reanchored']:,} earlier memories followed a rename")
    if rules:
        lines.append(rules)
    seconds = r["seconds"].get("total")
    state = "searchable" if r["searchable"] else "searchable once the projections catch up"
    lines.append(f"  {state}; log position {r['position']}" + (f"; {seconds:.1f} s" if seconds is not None else ""))
    return "\n".join(lines)


# --- the operator's operations (schemas/operator.py) ---------------------------------------------


def unmerge(r: RecordedResponse) -> str:
    return "\n".join(f"{e.event} on {e.memory_id}" for e in r.recorded)


def restore(r: RecordedResponse) -> str:
    return "\n".join(f"restored {e.memory_id} (position {r.position})" for e in r.recorded)


def token_create(r: TokenCreateResponse) -> str:
    if r.token is None:
        return r.note or ""
    where = f"{', '.join(r.operations)} on {', '.join(r.repos)}{' and global memories' if r.global_memories else ''}"
    return (
        f"{r.token}\n(token {r.name}: {where}; shown once, store it now: the server keeps only its hash; send it as "
        "Authorization: Bearer <token>)"
    )


def token_list(r: TokenListResponse) -> str:
    return "\n".join(_token_line(t) for t in r.tokens) or "no named tokens"


def _token_line(t: TokenListing) -> str:
    line = f"{t.name}: {', '.join(t.operations)} on {', '.join(t.repos)}{' +global' if t.global_memories else ''}"
    line += f"; created {t.created}" + (f" by {t.created_by}" if t.created_by else "")
    if t.issued is not None:
        line += f"; issued as {', '.join(t.issued.operations)} on {', '.join(t.issued.repos)}"
        line += " (an operator is every repo's: held to those repos)"
    revoked = f"; REVOKED {t.revoked}" + (f" by {t.revoked_by}" if t.revoked_by else "") if t.revoked else ""
    return line + revoked


def token_revoke(r: TokenRevokeResponse) -> str:
    return f"revoked {r.name}" if r.revoked else f"{r.name} was revoked already"


def log(r: LogResponse) -> str:
    return events([e.model_dump(mode="json") for e in r.events])
