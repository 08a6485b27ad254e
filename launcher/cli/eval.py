"""``coach eval safety FILE``: run only the deterministic safety screen over every user turn of a
transcript file (AnnoMI CSV, ESConv JSONL, UIC CSV or folder; see :mod:`launcher.transcripts`).

Prints the tier counts and, for every turn at tier 2 or 3, where it is (source, transcript, session,
turn index) and the matched rule ids. The user's text is printed only with ``--show-text``. One
:class:`~launcher.safety.SafetyState` per session, so the post-crisis window and the recent-distress
rules behave as in a live session.

The core, :func:`evaluate`, takes any iterable of :class:`EvalTurn`, so other inputs wire in trivially.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from launcher.cli._common import fail
from launcher.errors import LauncherError
from launcher.safety import SafetyConfig, SafetyState, screen
from launcher.transcripts.turns import EvalTurn, turns_from_file

__all__ = ["EvalHit", "EvalTurn", "SafetyReport", "eval_app", "evaluate", "turns_from_file"]


@dataclass(frozen=True)
class EvalHit:
    """A turn at tier >= 2: where, the tier, the rule ids; ``text`` only when asked for."""

    location: str
    tier: int
    reasons: list[str]
    text: str | None = None


@dataclass
class SafetyReport:
    """Tier counts over all turns (``tiers[t]``), rule-id counts, and the tier >= 2 hits in order."""

    turns: int = 0
    tiers: dict[int, int] = field(default_factory=lambda: {0: 0, 1: 0, 2: 0, 3: 0})
    rules: Counter[str] = field(default_factory=Counter)
    hits: list[EvalHit] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "turns": self.turns,
            "tiers": {str(k): v for k, v in self.tiers.items()},
            "rules": dict(sorted(self.rules.items())),
            "hits": [{k: v for k, v in asdict(h).items() if v is not None} for h in self.hits],
        }


def evaluate(
    turns: Iterable[EvalTurn], config: SafetyConfig | None = None, *, keep_text: bool = False
) -> SafetyReport:
    """Screen every turn (in order; a new ``session_key`` starts a fresh state). Pure apart from
    reading ``turns``; the text is kept in hits only when ``keep_text``."""
    cfg = config or SafetyConfig()
    report = SafetyReport()
    states: dict[str, SafetyState] = {}
    for turn in turns:
        state = states.setdefault(turn.session_key, SafetyState())
        result = screen(turn.text, state, cfg)
        report.turns += 1
        report.tiers[result.tier] += 1
        report.rules.update(result.reasons)
        if result.tier >= 2:
            report.hits.append(
                EvalHit(turn.location, result.tier, list(result.reasons), turn.text if keep_text else None)
            )
    return report


eval_app = typer.Typer(help="Evaluate components on real transcripts.", no_args_is_help=True)


@eval_app.command("safety")
def eval_safety_cmd(
    file: Annotated[Path, typer.Argument(help="AnnoMI .csv, ESConv .jsonl, UIC .csv or UIC folder")],
    transcript_id: Annotated[
        list[str] | None, typer.Option("--id", help="only these transcript ids (repeatable)")
    ] = None,
    show_text: Annotated[
        bool, typer.Option("--show-text", help="also print the text of tier 2-3 turns")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="labels JSONL for a dialogs JSONL FILE (format: examples/safety/README.md): "
            "prints recall per tier and family and false alarms per 1,000 ordinary turns, per layer",
        ),
    ] = None,
    layer: Annotated[
        list[str] | None,
        typer.Option(
            "--layer",
            help="with --labels: lexicon, context, semantic or all (repeatable; default: every layer)",
        ),
    ] = None,
) -> None:
    """Run only the safety screen over every user turn of FILE; print tier counts and tier 2-3 reasons.
    With --labels, score FILE's dialogs against their labels instead."""
    from launcher.config import ConfigError, load_config
    from launcher.transcripts import TranscriptError

    if labels is not None:
        _labelled_cmd(file, labels, layer or [], as_json, show_text, config_path)
        return
    skipped: list[str] = []
    try:
        cfg = load_config(config_path).safety
        report = evaluate(turns_from_file(file, transcript_id, skipped), cfg, keep_text=show_text)
    except (TranscriptError, ConfigError) as exc:
        fail(f"error: {exc}")
    if as_json:
        typer.echo(
            json.dumps(
                {"file": str(file), **report.to_json(), "skipped_without_user_turns": skipped},
                ensure_ascii=False,
            )
        )
        return
    counts = "  ".join(f"tier {t}: {n}" for t, n in sorted(report.tiers.items()))
    typer.echo(f"{file}: {report.turns} user turns screened")
    if skipped:
        typer.echo(
            f"skipped {len(skipped)} transcript(s) without user turns: {', '.join(skipped[:20])}"
            f"{' ...' if len(skipped) > 20 else ''}"
        )
    typer.echo(counts)
    for hit in report.hits:
        typer.echo(f"tier {hit.tier}  {hit.location}  {', '.join(hit.reasons)}")
        if hit.text is not None:
            typer.echo("    " + hit.text.replace("\n", "\n    "))
    if report.rules:
        typer.echo("rules: " + ", ".join(f"{r}={n}" for r, n in sorted(report.rules.items())))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _labelled_cmd(
    file: Path, labels: Path, layers: list[str], as_json: bool, show_text: bool, config_path: Path | None
) -> None:
    from launcher.config import ConfigError, load_config
    from launcher.safety._evaluation import LAYERS, LabelError, evaluate_labelled, read_labelled

    unknown = [x for x in layers if x not in LAYERS]
    if unknown:
        fail(f"error: unknown --layer {', '.join(unknown)}; choose from {', '.join(LAYERS)}")
    try:
        cfg = load_config(config_path).safety
        pairs = read_labelled(file, labels)
        reports = [evaluate_labelled(pairs, cfg, x) for x in (layers or LAYERS)]  # type: ignore[arg-type]
    except (LabelError, ConfigError) as exc:
        fail(f"error: {exc}")
    except LauncherError as exc:  # the semantic layer's model is missing
        fail(f"error ({exc.code}): {exc}")
    if as_json:
        typer.echo(
            json.dumps({"file": str(file), "labels": str(labels), "layers": [r.to_json() for r in reports]})
        )
        return
    first = reports[0].to_json()
    typer.echo(
        f"{file}: {first['dialogs']} labelled dialogs ({first['risk']} risk, {first['ordinary']} ordinary)"
    )
    typer.echo(f"{'layer':<10} {'recall t3':>10} {'recall t2+':>11} {'false alarms/1000':>18}")
    for r in reports:
        fa = r.false_alarms_per_1000
        typer.echo(
            f"{r.layer:<10} {_pct(r.recall_t3):>10} {_pct(r.recall_t2plus):>11} "
            f"{'-' if fa is None else f'{fa:.1f}':>18}"
        )
    typer.echo("recall per family (reached its tier / labelled):")
    fams = reports[0].per_family()
    typer.echo(f"  {'family':<22}" + "".join(f"{r.layer:>10}" for r in reports))
    for fam in fams:
        cells = "".join(f"{'{}/{}'.format(*r.per_family().get(fam, (0, 0))):>10}" for r in reports)
        typer.echo(f"  {fam:<22}{cells}")
    last = reports[-1]
    texts = {d.id: d.turns for d, _ in pairs} if show_text else {}
    for o in last.outcomes:
        if o.miss or o.false_alarm:
            kind = "miss" if o.miss else "false alarm"
            typer.echo(
                f"{kind} ({last.layer}): {o.label.id} label {o.label.tier} {o.label.family} -> tier {o.tier} "
                f"{', '.join(o.reasons)}"
            )
            if show_text:
                typer.echo("    " + " || ".join(texts[o.label.id]))
