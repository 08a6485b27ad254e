"""``coach board show --user U [--session S] [--json]``: what the blackboard holds for a user.

Lists, per session and turn, each entry's kind (the six agents' outputs first, then the supervisor's
``message``/``delivery``/``record`` and the turn's ``meta``), version, author, commit sequence number
and time, and the rule ids of safety-tier raises an agent's risk assessment made or had refused; then the
compacted profile (version, sessions merged, traits, goals, pattern). Message texts and agent outputs are
not printed (``--json`` gives the entries' metadata and the profile's value).
Opens the store read-mostly through ``blackboard.open_store``; exit 2 when the user has nothing stored.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from launcher.cli._common import fail

__all__ = ["board_app", "board_document"]

board_app = typer.Typer(help="Inspect the blackboard.", no_args_is_help=True)


def _kind_order(kind: str) -> tuple[int, str]:
    from blackboard import AGENT_ORDER

    return (AGENT_ORDER.index(kind), kind) if kind in AGENT_ORDER else (len(AGENT_ORDER), kind)


def _entry_order(entry: dict[str, Any]) -> tuple[int, str]:
    return _kind_order(str(entry["kind"]))


def board_document(store: Any, user: str, session: str | None = None) -> dict[str, Any]:
    """``{"user", "sessions": [{"session", "closed", "turns": [{"turn", "entries": [{kind, version,
    author, seq, updated_at}], "crisis_tier", "synthesis_source", "safety_raises", "safety_refused"}]}],
    "profile": {version, updated_at, value} | None}`` (times: Unix s; ``crisis_tier`` /
    ``synthesis_source`` from the turn's record, None while it has none; ``safety_raises`` /
    ``safety_refused``: the record's rule ids, [] without one).

    Raises ``blackboard.InvalidKeyError`` for bad ids, ``StoreUnavailableError`` when the store fails.
    """
    from blackboard import profile_key, session_key

    prefix = (
        session_key(user, session) + "/" if session else profile_key(user).rsplit("/", 1)[0] + "/sessions/"
    )
    turns: defaultdict[str, defaultdict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    closed: dict[str, bool] = {}
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for e in store.list(prefix):
        parts = e.key.split("/")
        if len(parts) == 4:  # users/{u}/sessions/{s}: the session record
            closed[parts[3]] = bool(e.value.get("closed_at"))
            continue
        if len(parts) < 7 or parts[4] != "turns":
            continue
        if parts[6] == "record" and isinstance(e.value, dict):
            records[(parts[3], parts[5])] = e.value
        turns[parts[3]][parts[5]].append(
            {
                "kind": parts[6],
                "version": e.version,
                "author": e.author,
                "seq": e.seq,
                "updated_at": e.updated_at,
            }
        )
    sessions: list[dict[str, Any]] = []
    for s in sorted(set(turns) | set(closed)):
        rows: list[dict[str, Any]] = [
            {
                "turn": t,
                "entries": sorted(turns[s][t], key=_entry_order),
                "crisis_tier": records.get((s, t), {}).get("crisis_tier"),
                "synthesis_source": records.get((s, t), {}).get("synthesis_source"),
                "safety_raises": list(records.get((s, t), {}).get("safety_raises", [])),
                "safety_refused": list(records.get((s, t), {}).get("safety_refused", [])),
            }
            for t in sorted(turns[s])
        ]
        sessions.append({"session": s, "closed": closed.get(s, False), "turns": rows})
    prof = store.read(profile_key(user))
    profile = (
        None
        if prof is None
        else {"version": prof.version, "updated_at": prof.updated_at, "value": prof.value}
    )
    return {"user": user, "sessions": sessions, "profile": profile}


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _profile_lines(profile: dict[str, Any]) -> list[str]:
    v = profile["value"]
    lines = [f"profile v{profile['version']} (updated {_when(profile['updated_at'])})"]
    for key, value in v.items():
        if key == "user":
            continue
        text = json.dumps(value, ensure_ascii=False)
        lines.append(f"  {key}: {text[:160]}{'...' if len(text) > 160 else ''}")
    return lines


def _turn_notes(t: dict[str, Any], agents: list[dict[str, Any]]) -> list[str]:
    """The notes under a turn's rows: safety raises and refusals, a crisis-only turn, missing entries."""
    from rich.markup import escape

    from blackboard import AGENT_ORDER

    notes: list[str] = []
    missing = [a for a in AGENT_ORDER if a not in {e["kind"] for e in agents}]
    raises, refused = t.get("safety_raises") or [], t.get("safety_refused") or []
    if raises:
        notes.append(
            f"[yellow]turn {t['turn']}: safety tier raised to {t['crisis_tier']} by an agent's risk "
            f"assessment ({escape(', '.join(raises))})[/yellow]"
        )
    if refused:
        notes.append(f"[dim]turn {t['turn']}: safety raise refused ({escape(', '.join(refused))})[/dim]")
    replaced = t.get("synthesis_source") in ("crisis", "support")  # a safety response, no synthesis
    if replaced and not raises:  # by design: the safety screen answered, no agent ran
        notes.append(
            f"[dim]turn {t['turn']}: crisis response only (safety tier {t['crisis_tier']}); "
            "no agent runs on such a turn[/dim]"
        )
    elif missing and not replaced:  # after a raise, the note above says why entries are missing
        notes.append(f"[red]turn {t['turn']} has no entry from: {', '.join(missing)}[/red]")
    return notes


@board_app.command("show")
def show_cmd(
    user: Annotated[str, typer.Option("--user", "-u", help="user id")],
    session: Annotated[str | None, typer.Option("--session", "-s", help="only this session")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
) -> None:
    """List each turn's entries (agent, version, author, time) and the compacted profile."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from blackboard import BlackboardError, PostgresStore, Store, open_store
    from launcher.cli._common import load_config_or_exit, read_only_data_dir

    config = load_config_or_exit(config_path)
    data_dir = Path(config.data.dir)
    where = str(data_dir / "blackboard.sqlite3")
    if config.data.url:  # PostgreSQL ([data] url / COACH_DATABASE_URL): read there, never created
        from blackboard._pg_conn import describe

        where = f"PostgreSQL {describe(config.data.url)} schema {config.data.db_schema}"
    elif not (data_dir / "blackboard.sqlite3").exists():
        fail(
            f"error: no blackboard in {data_dir} (run `coach demo` or `coach run` first, or set "
            "COACH_DATA_DIR / [data] dir)"
        )
    elif (problem := read_only_data_dir(data_dir)) is not None:
        fail(f"error: {problem}")
    try:
        store: Store = (
            PostgresStore(config.data.url, schema=config.data.db_schema, upgrade=False)
            if config.data.url
            else open_store(data_dir)
        )
        try:
            doc = board_document(store, user, session)
        finally:
            store.close()
    except BlackboardError as exc:
        fail(f"error ({exc.code}): {exc}")
    if not doc["sessions"] and doc["profile"] is None:
        fail(
            f"error: nothing stored for user {user!r}{f' session {session!r}' if session else ''} in {where}"
        )
    if as_json:
        typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    from blackboard import AGENT_ORDER

    out = Console(highlight=False, width=None if sys.stdout.isatty() else 100)
    # paths, authors and profile values are text, not rich markup ("[/b]" in a folder name raised)
    out.print(f"blackboard {escape(where)}: user [bold]{escape(user)}[/bold]")
    for s in doc["sessions"]:
        table = Table(
            title=f"session {escape(s['session'])} ({'closed' if s['closed'] else 'open'})",
            title_justify="left",
        )
        notes: list[str] = []
        for col in ("turn", "entry", "version", "author", "seq", "time"):
            table.add_column(col, justify="right" if col in ("version", "seq") else "left", no_wrap=True)
        for t in s["turns"]:
            agents = [e for e in t["entries"] if e["kind"] in AGENT_ORDER]
            for i, e in enumerate(t["entries"]):
                style = "" if e["kind"] in AGENT_ORDER else "dim"
                kind = escape(e["kind"])
                table.add_row(
                    escape(t["turn"]) if i == 0 else "",
                    f"[{style}]{kind}[/{style}]" if style else kind,
                    str(e["version"]),
                    escape(e["author"]),
                    str(e["seq"]),
                    _when(e["updated_at"]),
                )
            notes.extend(_turn_notes(t, agents))
            table.add_section()
        out.print(table)
        for note in notes:
            out.print(note)
    if doc["profile"] is None:
        out.print("no compacted profile yet (it is written when a session closes)")
    else:
        out.print("\n".join(_profile_lines(doc["profile"])), markup=False)
