"""``coach replay FILE [--transcript-id ID | --dialog N | --patient P] [--user U] [--out FILE.jsonl]``.

Plays the user side of a real transcript through the six-agent pipeline, one turn per user utterance,
in the three formats of ``launcher.transcripts`` (AnnoMI CSV by ``--transcript-id``, ESConv JSONL by
``--dialog`` index, UIC CSV or folder by ``--patient``, each goal cycle a session). Each session of the
transcript is a blackboard session ``{prefix}-s{n}``, closed (compacted into the profile) after its
last turn. Writes one JSON line per turn, exactly the ``coach run --json`` document
(``TurnResult.to_json()``), to ``--out`` or stdout; the progress bar and notes go to stderr.
Exit codes: 0 done (turns may be degraded), 2 bad input or configuration, 130 interrupted.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from launcher.cli._common import check_service_urls, check_user, fail, load_config_or_exit, plural

__all__ = ["load_transcript", "replay_cmd", "turn_line"]


def turn_line(result: Any) -> str:
    """One JSON line: the ``coach run --json`` document of ``result`` (a ``TurnResult``), compact."""
    return json.dumps(result.to_json(), ensure_ascii=False)


def load_transcript(
    path: Path, *, transcript_id: str | None = None, dialog: int | None = None, patient: str | None = None
) -> Any:
    """Read the transcript addressed by the option that fits the file's format.

    Raises ``launcher.transcripts.TranscriptError`` (code ``bad_format`` when an option does not fit
    the format, ``unknown_id`` listing the ids that exist, ``not_found``, ``empty``).
    """
    from launcher.transcripts import TranscriptError, detect_source, read_annomi, read_esconv, read_uic

    given = {
        k: v
        for k, v in (("--transcript-id", transcript_id), ("--dialog", dialog), ("--patient", patient))
        if v is not None
    }
    if len(given) > 1:
        raise TranscriptError("bad_format", f"give at most one of {', '.join(given)}")
    source = detect_source(path)
    wants = {"annomi": "--transcript-id", "esconv": "--dialog", "uic": "--patient"}[source]
    if given and wants not in given:
        name = {"annomi": "an AnnoMI", "esconv": "an ESConv", "uic": "a UIC"}[source]
        raise TranscriptError(
            "bad_format", f"{path} is {name} file: address it with {wants}, not {next(iter(given))}"
        )
    if source == "annomi":
        return read_annomi(path, transcript_id)
    if source == "esconv":
        if dialog is None:
            raise TranscriptError(
                "unknown_id", f"{path} is an ESConv file: give --dialog N (0-based line index)"
            )
        return read_esconv(path, dialog)
    return read_uic(path, patient)


def summary_line(turn: Any) -> str:
    """A short stderr note for a replayed turn (no user text)."""
    r = turn.result
    state = f"degraded (missing {', '.join(r.missing)})" if r.degraded else "complete"
    return (
        f"session {turn.session} turn {turn.turn} ({turn.session_id}/{r.turn_id}): synthesis "
        f"{r.synthesis_source}, {state}, {turn.wall_s:.1f} s"
    )


def replay_cmd(
    file: Annotated[Path, typer.Argument(help="AnnoMI .csv, ESConv .jsonl, or UIC patient<N>.csv / folder")],
    transcript_id: Annotated[str | None, typer.Option("--transcript-id", help="AnnoMI transcript id")] = None,
    dialog: Annotated[int | None, typer.Option("--dialog", help="ESConv dialog (0-based line index)")] = None,
    patient: Annotated[str | None, typer.Option("--patient", help="UIC patient number")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="user id (default: {source}-{id})")] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write the JSON lines here (default stdout)")
    ] = None,
    turns_per_session: Annotated[
        int | None, typer.Option("--turns-per-session", min=1, help="play at most N utterances per session")
    ] = None,
    prefix: Annotated[str | None, typer.Option("--session-prefix", help="session ids {prefix}-s{n}")] = None,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
    proxy_url: Annotated[str | None, typer.Option("--proxy-url", help="use a running proxy")] = None,
    mcp_url: Annotated[str | None, typer.Option("--mcp-url", help="use a running MCP HTTP server")] = None,
) -> None:
    """Play the user side of a real transcript through the pipeline; one JSON line per turn."""
    import anyio
    from rich.console import Console

    from launcher.agents import AgentSpecError
    from launcher.errors import LauncherError
    from launcher.pipeline._replay import default_user, run_tag
    from launcher.transcripts import TranscriptError

    try:
        transcript = load_transcript(file, transcript_id=transcript_id, dialog=dialog, patient=patient)
    except TranscriptError as exc:
        fail(f"error ({exc.code}): {exc}")
    user = user or default_user(transcript)
    check_user(user)
    prefix = prefix or run_tag()
    _check_prefix(prefix)
    config = load_config_or_exit(config_path)
    if out is not None:
        _check_out(out)
    check_service_urls(proxy_url, mcp_url)
    err = Console(file=sys.stderr, highlight=False, soft_wrap=True)

    async def main(sink: IO[str]) -> None:
        from launcher.pipeline._runtime import coach_runtime

        err.print(
            f"replaying {transcript.source} {transcript.id}: {len(transcript.sessions)} sessions, "
            f"{len(transcript.utterances)} user turns, as user {user} (sessions {prefix}-s1..)"
        )
        async with coach_runtime(config, proxy_url=proxy_url, mcp_url=mcp_url) as rt:
            await run_replay(
                rt,
                transcript,
                user=user,
                prefix=prefix,
                console=err,
                sink=sink,
                turns_per_session=turns_per_session,
            )

    try:
        if out is None:
            anyio.run(main, sys.stdout)
        else:
            lazy = _LazyFile(out)  # an existing --out is replaced only once the first turn is done
            try:
                anyio.run(main, lazy)
            finally:
                lazy.close()
    except KeyboardInterrupt:
        err.print("interrupted: the running turn was cancelled and every agent process stopped")
        raise typer.Exit(130) from None
    except (AgentSpecError, LauncherError) as exc:
        err.print(f"error: {exc}", markup=False)  # "[agents] dir" is text, not markup
        raise typer.Exit(2) from None
    if out is not None:
        err.print(f"turns written to {out}", markup=False)


class _LazyFile(io.StringIO):
    """A text sink that opens (truncates) ``path`` on its first ``write``: a replay that fails before
    its first turn (agent files, data dir) leaves an existing ``--out`` file as it was."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._file: IO[str] | None = None

    def write(self, text: str) -> int:
        if self._file is None:
            self._file = self.path.open("w", encoding="utf-8")
        return self._file.write(text)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


def _check_prefix(prefix: str) -> None:
    """Refuse a ``--session-prefix`` whose session ids (``{prefix}-s{n}``) are not valid key parts:
    ``error: --session-prefix: ...`` on stderr, exit 2."""
    from blackboard import InvalidKeyError, session_key

    try:
        session_key("u", f"{prefix}-s1")
    except InvalidKeyError:
        fail(
            f"error: --session-prefix: {prefix!r} makes invalid session ids ({prefix}-s1): use "
            "[A-Za-z0-9_.-] only, at most 60 characters"
        )


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot be written (a folder, under a file, no permission) before any
    turn runs: ``error: --out ...`` on stderr, exit 2. Creates the missing parent folders."""
    try:
        if out.is_dir():
            raise IsADirectoryError(21, "it is a folder")
        if any(parent.exists() and not parent.is_dir() for parent in out.parents):
            raise NotADirectoryError(20, "a folder on its path is a file")
        out.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
            raise PermissionError(13, "permission denied")
    except OSError as exc:
        fail(
            f"error: --out {out} cannot be written ({exc.strerror or exc}). Fix: pass a file path in a "
            "writable folder, or omit --out to write to stdout"
        )


async def run_replay(
    rt: Any,
    transcript: Any,
    *,
    user: str,
    prefix: str,
    console: Any,
    sink: IO[str] | None,
    turns_per_session: int | None = None,
    on_turn: Callable[[Any], None] | None = None,
    on_coach_reply: Callable[[str], None] | None = None,
    stream_reply: bool = False,
) -> list[Any]:
    """Replay on a started runtime (``launcher.pipeline._runtime.Runtime``): JSON lines to ``sink`` (if any),
    a note per turn and per closed session on ``console``. Returns the ``ReplayedTurn`` list."""
    from launcher.pipeline._replay import quiet_interrupts, replay_transcript

    quiet_interrupts()

    def turn_done(turn: Any) -> None:
        if sink is not None:
            sink.write(turn_line(turn.result) + "\n")
            sink.flush()
        if on_turn is not None:
            on_turn(turn)
        else:
            console.print(summary_line(turn))

    def closed(res: Any) -> None:
        merged = ", ".join(res.merged) or "nothing"
        console.print(
            f"session {res.session} closed ({plural(res.turns, 'turn')}): merged {merged} into the profile "
            f"(v{res.profile_version})"
        )

    return await replay_transcript(
        rt.supervisor,
        transcript,
        user=user,
        prefix=prefix,
        console=console,
        turns_per_session=turns_per_session,
        runner=rt.runner,
        on_turn=turn_done,
        on_close=closed,
        on_coach_reply=on_coach_reply,
        stream_reply=stream_reply,
    )
