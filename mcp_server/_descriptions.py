"""Tool descriptions, written for the model that calls the tools (what to pass, what comes back,
what to do on error). Kept in one place so the agents engineer can review the wording."""

from __future__ import annotations

from blackboard import WRITE_TOOL_NAMES

__all__ = ["READ_DESCRIPTIONS", "WRITE_DESCRIPTIONS", "WRITE_TOOL_NAMES"]

# WRITE_TOOL_NAMES (agent -> its write tool) comes from the roster (blackboard/_roster.py).

_WRITE_COMMON = (
    " Pass your output as the tool arguments: one JSON object with exactly the fields of the input "
    "schema (no extra fields). The user, session and turn are fixed by the connection; do not pass them."
    '\n\nReturns: {ok: true, message: "STORED.", stored, agent, turn, key, version, author, updated_at}. '
    "Each agent's entry is stored once per turn (create-only); after STORED, you are done with this tool."
    "\n\nOn error: the result lists each problem as `field`: what was wrong; allowed: what is allowed. "
    "Fix exactly those fields and call the tool again with the whole object. If it says the entry "
    "already exists (version_conflict), your output for this turn is already stored: do not write again."
)

WRITE_DESCRIPTIONS: dict[str, str] = {
    "shadow": (
        "Store Shadow's analysis for this turn: cross-session behavioural patterns, stated goals vs "
        "revealed priorities (hypotheses, each citing at least 2 evidence items), the follow-through "
        "probability 0-1 and the pattern class. Pineal waits for this entry, so write it as soon as it "
        "is ready." + _WRITE_COMMON
    ),
    "persona": (
        "Store Persona's assessment for this turn: the five OCEAN traits as 0-100 (POMP) with a "
        "confidence 0-1 and an evidence count each, recurring goals, follow-through and growth areas."
        + _WRITE_COMMON
    ),
    "plasticity": (
        "Store Plasticity's coaching strategy for this turn: strategy, tone, framing and do/don't "
        "lists derived from the personality profile." + _WRITE_COMMON
    ),
    "stability": (
        "Store Stability's risk frame for this turn: risks rated severity, occurrence, detection "
        "difficulty and reversibility (1-10 each) and the moves the coach must not suggest. A "
        "deterministic gate re-checks every move: a move whose ratings cross the blocking thresholds is "
        "stored as blocked even if you marked it allowed; the result tells you which moves the gate "
        "blocked." + _WRITE_COMMON
    ),
    "coach": (
        "Store the Coach's immediate reply for this turn (the text the user already saw)." + _WRITE_COMMON
    ),
    "pineal": (
        "Store Pineal's synthesis for this turn: the full response plus citations of the blackboard "
        "entries (and versions) it relies on, as returned by collect_turn. A synthesis that suggests a "
        "blocked move or cites an entry that is missing is rejected with the reasons; repair it once. "
        "Call collect_turn first." + _WRITE_COMMON
    ),
}

READ_DESCRIPTIONS: dict[str, str] = {
    "read_entry": (
        "Read one blackboard entry of your own session. Pass `key` as an entry name of the current turn "
        "(e.g. 'shadow', 'stability'), as 'turns/<turn>/<entry>' for an earlier turn of this session, "
        "'profile' for the user's compacted profile, or 'session' for the session record."
        "\n\nReturns: {ok, found, key, version, author, updated_at, value}; found=false when nothing is "
        "stored yet (not an error: do not retry in a loop).\n\nOn error: keys of other users or "
        "sessions are refused; use only the forms above."
    ),
    "list_entries": (
        "List the entries of your own session under a prefix. `prefix` is relative to the session: "
        "'' for everything, 'turns/3/' for one turn. Set include_values=true to get the values too "
        "(larger result). At most `limit` entries, newest turns last."
        "\n\nReturns: {ok, prefix, count, truncated, entries: [{key, version, author, updated_at, value?}]}."
        "\n\nOn error: prefixes outside your session are refused."
    ),
    "get_profile": (
        "Get the user's compacted cross-session profile (traits, goals, commitments, patterns so far). "
        "No arguments.\n\nReturns: {ok, found, version, profile}; found=false for a new user."
    ),
    "get_session_history": (
        "Get the earlier turns of this session, oldest first: for each turn the entries written and "
        "their versions, and the turn record when the turn has ended. `last_n` limits it to the most "
        "recent turns.\n\nReturns: {ok, session, turns: [{turn, entries: {name: {version, author, value}}}]}."
    ),
    "collect_turn": (
        "Pineal only. Wait until Shadow has written this turn's entry (it always comes first) and the "
        "other agents have written theirs, or until the deadline, then return the arbitrated brief: "
        "what each agent said, Stability's blocked moves (never suggest them), conflicts resolved in "
        "Stability's favour with reason codes, and the entry versions to cite. `deadline_s` is how long "
        "to wait (seconds; default set by the server)."
        "\n\nReturns: {ok, turn, timed_out, waited_s, arrived: [...], missing: [...], versions: {agent: version}, "
        "brief}. Missing agents are simply absent: write the synthesis from what arrived, and cite only "
        "entries listed in versions."
    ),
}
