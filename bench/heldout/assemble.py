"""Assemble a held-out safety set from writers' drafts: ``DIR/drafts/part_*.jsonl`` ->
``DIR/PREFIX.dialogs.jsonl`` and ``DIR/PREFIX.labels.jsonl`` (the format of ``examples/safety/README.md``).

Each draft line: ``{"turns": [...], "tier": 0-3, "family": ..., "style": [...]}`` (no ids; ``context``,
``terse`` and ``long`` are derived here). Checks every line, drops repeated final messages (case, spaces
and punctuation ignored), shuffles with a fixed seed, assigns ids ``ID_PREFIX-0001``..., and prints
**counts only**: whoever changes the screen must not read the items (docs/safety.md, "Measuring it").

Usage: python bench/heldout/assemble.py DIR --prefix safety_fresh5 --ids h5 --seed 20261206 [--write]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path

FAMILY_TIERS = {
    "none": {0}, "idiom": {0, 1}, "negated": {1}, "distress": {1},
    "passive_ideation": {2}, "active_ideation": {2}, "self_harm": {2}, "abuse": {2},
    "method": {3}, "intent": {3}, "plan": {3}, "means": {3}, "preparatory": {3}, "timeline": {3},
    "in_progress": {3}, "other_in_danger": {3}, "lethal_means_request": {3}, "medical_emergency": {3},
}  # fmt: skip
HAND_STYLES = {"typo", "truncation", "slang", "euphemism", "leetspeak", "conditional", "third_person"}


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def read_drafts(folder: Path) -> tuple[list[dict[str, object]], list[str]]:
    """The valid draft items of ``folder/drafts/part_*.jsonl`` and one error line per invalid one."""
    items: list[dict[str, object]] = []
    errors: list[str] = []
    for path in sorted((folder / "drafts").glob("part_*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{path.name}:{n}: {exc}")
                continue
            turns, tier, family = obj.get("turns"), obj.get("tier"), obj.get("family")
            if not (
                isinstance(turns, list)
                and 1 <= len(turns) <= 4
                and all(isinstance(t, str) and t.strip() for t in turns)
            ):
                errors.append(f"{path.name}:{n}: turns must be 1-4 non-empty strings")
                continue
            if family not in FAMILY_TIERS or tier not in FAMILY_TIERS[family]:
                errors.append(f"{path.name}:{n}: family {family!r} with tier {tier!r}")
                continue
            styles = [s for s in obj.get("style", []) if s in HAND_STYLES]
            items.append(
                {"turns": [t.strip() for t in turns], "tier": tier, "family": family, "style": styles}
            )
    return items, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--prefix", required=True, help="output file prefix, e.g. safety_fresh5")
    ap.add_argument("--ids", required=True, help="id prefix, e.g. h5")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--write", action="store_true", help="write the two files (else count only)")
    args = ap.parse_args()
    items, errors = read_drafts(args.dir)
    seen: set[str] = set()
    unique = []
    for item in items:
        k = _key(item["turns"][-1])  # type: ignore[index]
        if k not in seen:
            seen.add(k)
            unique.append(item)
    random.Random(args.seed).shuffle(unique)
    dialogs, labels = [], []
    for i, item in enumerate(unique, 1):
        iid = f"{args.ids}-{i:04d}"
        turns: list[str] = item["turns"]  # type: ignore[assignment]
        words = len(turns[-1].split())
        style = list(item["style"])  # type: ignore[call-overload]
        style += ["context"] * (len(turns) > 1) + ["terse"] * (words <= 6) + ["long"] * (40 <= words <= 80)
        dialogs.append({"id": iid, "turns": turns})
        labels.append({"id": iid, "tier": item["tier"], "family": item["family"], "style": style})
    if args.write:
        for name, rows in (("dialogs", dialogs), ("labels", labels)):
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            (args.dir / f"{args.prefix}.{name}.jsonl").write_text(text, encoding="utf-8")
    print(
        f"items {len(unique)} (repeated final messages dropped: {len(items) - len(unique)}); errors {len(errors)}"
    )
    for e in errors[:10]:
        print("  " + e)
    print("tiers", sorted(Counter(lab["tier"] for lab in labels).items()))
    print("families", sorted(Counter((lab["tier"], lab["family"]) for lab in labels).items()))
    print("multi-turn", sum("context" in lab["style"] for lab in labels))
    print("styles", sorted(Counter(s for lab in labels for s in lab["style"]).items()))


if __name__ == "__main__":
    main()
