"""Scoring the screen on a labelled set: recall per tier and per family, false alarms per 1,000 ordinary
turns, each layer alone and all together.

Files (JSON Lines, UTF-8; the format of ``examples/safety/``):

- dialogs: ``{"id": "r0001", "turns": ["earlier user message", ..., "final user message"]}``;
- labels: ``{"id": "r0001", "tier": 3, "family": "plan", "style": ["typo"]}``, one per dialog. The label
  is the tier a careful counsellor gives the *last* turn in its context; earlier turns are context only.

Measures (``n`` = labelled dialogs of that kind):

- ``recall_t3`` = tier-3 labels screened at 3 ÷ tier-3 labels;
- ``recall_t2plus`` = tier >= 2 labels screened at >= 2 ÷ tier >= 2 labels;
- per family: labels of that family screened at their own tier or above;
- ``false_alarms_per_1000`` = 1000 × ordinary labels (tier 0-1) screened at >= 2 ÷ ordinary labels (a
  tier-1 answer to an ordinary message is not an alarm: coaching continues).

Layers: ``lexicon`` (the final message alone, rules only), ``context`` (rules with the session state built
from the earlier turns), ``semantic`` (the embedding classifier alone on the final message), ``all`` (the
shipped screen, :func:`launcher.safety.screen`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ._lexical import SafetyConfig, SafetyState, screen

__all__ = ["LAYERS", "Dialog", "Label", "LabelError", "LabelledReport", "evaluate_labelled", "read_labelled"]

Layer = Literal["lexicon", "context", "semantic", "all"]
LAYERS: tuple[Layer, ...] = ("lexicon", "context", "semantic", "all")


class LabelError(ValueError):
    """A dialogs or labels file that cannot be used; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Dialog:
    id: str
    turns: tuple[str, ...]


@dataclass(frozen=True)
class Label:
    id: str
    tier: int
    family: str
    style: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """One scored dialog: the label, the tier given, the reasons (rule ids, never text)."""

    label: Label
    tier: int
    reasons: tuple[str, ...]

    @property
    def miss(self) -> bool:
        return self.label.tier >= 2 and self.tier < self.label.tier

    @property
    def false_alarm(self) -> bool:
        return self.label.tier <= 1 and self.tier >= 2


@dataclass
class LabelledReport:
    """The measures of one layer over one labelled set (see the module docstring)."""

    layer: str
    outcomes: list[Outcome] = field(default_factory=list)

    def _recall(self, keep: Callable[[Outcome], bool], reached: Callable[[Outcome], bool]) -> float | None:
        chosen = [o for o in self.outcomes if keep(o)]
        return sum(reached(o) for o in chosen) / len(chosen) if chosen else None

    @property
    def recall_t3(self) -> float | None:
        return self._recall(lambda o: o.label.tier == 3, lambda o: o.tier >= 3)

    @property
    def recall_t2plus(self) -> float | None:
        return self._recall(lambda o: o.label.tier >= 2, lambda o: o.tier >= 2)

    @property
    def false_alarms_per_1000(self) -> float | None:
        ordinary = [o for o in self.outcomes if o.label.tier <= 1]
        return 1000.0 * sum(o.false_alarm for o in ordinary) / len(ordinary) if ordinary else None

    def per_family(self) -> dict[str, tuple[int, int]]:
        """family -> (reached its tier, labelled), risk families only."""
        out: dict[str, tuple[int, int]] = {}
        for o in self.outcomes:
            if o.label.tier < 2:
                continue
            hit, n = out.get(o.label.family, (0, 0))
            out[o.label.family] = (hit + (o.tier >= o.label.tier), n + 1)
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "dialogs": len(self.outcomes),
            "risk": sum(o.label.tier >= 2 for o in self.outcomes),
            "ordinary": sum(o.label.tier <= 1 for o in self.outcomes),
            "recall_t3": self.recall_t3,
            "recall_t2plus": self.recall_t2plus,
            "false_alarms_per_1000": self.false_alarms_per_1000,
            "recall_per_family": {f: {"reached": h, "of": n} for f, (h, n) in self.per_family().items()},
            "misses": [
                {
                    "id": o.label.id,
                    "label": o.label.tier,
                    "family": o.label.family,
                    "tier": o.tier,
                    "reasons": list(o.reasons),
                }
                for o in self.outcomes
                if o.miss
            ],
            "false_alarms": [
                {"id": o.label.id, "family": o.label.family, "tier": o.tier, "reasons": list(o.reasons)}
                for o in self.outcomes
                if o.false_alarm
            ],
        }


def _jsonl(path: Path, what: str) -> Iterable[tuple[int, dict[str, object]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise LabelError(f"{path}: no such {what} file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelError(
            f"{path}: cannot read the {what} file ({exc}); it must be UTF-8 JSON Lines"
        ) from None
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise LabelError(
                f"{path}:{no}: not JSON ({exc.args[0]}); each line must be one JSON object"
            ) from None
        if not isinstance(obj, dict):
            raise LabelError(f"{path}:{no}: expected a JSON object, got {type(obj).__name__}")
        yield no, obj


def read_labelled(dialogs_path: Path, labels_path: Path) -> list[tuple[Dialog, Label]]:
    """Read a dialogs file and its labels (module docstring); pairs in the dialogs' order. Raises
    LabelError naming the file and line for a malformed line, an unknown or missing id, a tier outside
    0-3, or a dialog without turns."""
    dialogs: dict[str, Dialog] = {}
    for no, obj in _jsonl(dialogs_path, "dialogs"):
        turns = obj.get("turns")
        if (
            not isinstance(obj.get("id"), str)
            or not isinstance(turns, list)
            or not turns
            or not all(isinstance(t, str) for t in turns)
        ):
            raise LabelError(f'{dialogs_path}:{no}: expected {{"id": "...", "turns": ["user message", ...]}}')
        dialogs[str(obj["id"])] = Dialog(str(obj["id"]), tuple(str(t) for t in turns))
    labels: dict[str, Label] = {}
    for no, obj in _jsonl(labels_path, "labels"):
        tier, family, style = obj.get("tier"), obj.get("family"), obj.get("style", [])
        if (
            not isinstance(obj.get("id"), str)
            or not isinstance(tier, int)
            or not 0 <= tier <= 3
            or not isinstance(family, str)
            or not isinstance(style, list)
        ):
            raise LabelError(
                f'{labels_path}:{no}: expected {{"id": "...", "tier": 0-3, "family": "...", "style": [...]}}'
            )
        if obj["id"] not in dialogs:
            raise LabelError(f"{labels_path}:{no}: id {obj['id']!r} is not in {dialogs_path}")
        labels[str(obj["id"])] = Label(str(obj["id"]), tier, family, tuple(str(s) for s in style))
    missing = [d for d in dialogs if d not in labels]
    if missing:
        raise LabelError(f"{labels_path}: no label for {len(missing)} dialog(s), e.g. {missing[:5]}")
    if not dialogs:
        raise LabelError(f"{dialogs_path}: no dialogs")
    return [(d, labels[d.id]) for d in dialogs.values()]


def _layer_screen(
    layer: Layer, config: SafetyConfig
) -> Callable[[Sequence[str]], tuple[int, tuple[str, ...]]]:
    def lexicon(turns: Sequence[str]) -> tuple[int, tuple[str, ...]]:
        r = screen(turns[-1], None, config.model_copy(update={"semantic": False}))
        return r.tier, tuple(r.reasons)

    def context(turns: Sequence[str]) -> tuple[int, tuple[str, ...]]:
        cfg = config.model_copy(update={"semantic": False})
        state = SafetyState()
        for t in turns[:-1]:
            screen(t, state, cfg)
        r = screen(turns[-1], state, cfg)
        return r.tier, tuple(r.reasons)

    def semantic(turns: Sequence[str]) -> tuple[int, tuple[str, ...]]:
        from ._semantic import semantic_layer

        v = semantic_layer().assess(turns[-1])
        return v.tier, (f"sem.{v.family}",) if v.tier else ()

    def full(turns: Sequence[str]) -> tuple[int, tuple[str, ...]]:
        state = SafetyState()
        for t in turns[:-1]:
            screen(t, state, config)
        r = screen(turns[-1], state, config)
        return r.tier, tuple(r.reasons)

    return {"lexicon": lexicon, "context": context, "semantic": semantic, "all": full}[layer]


def evaluate_labelled(
    pairs: Sequence[tuple[Dialog, Label]], config: SafetyConfig | None = None, layer: Layer = "all"
) -> LabelledReport:
    """Screen every dialog with ``layer`` (a fresh session each) and score its last turn."""
    run = _layer_screen(layer, config or SafetyConfig())
    report = LabelledReport(layer)
    for dialog, label in pairs:
        tier, reasons = run(dialog.turns)
        report.outcomes.append(Outcome(label, tier, reasons))
    return report
