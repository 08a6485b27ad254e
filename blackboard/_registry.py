"""Agent name -> output schema, and validation that turns pydantic errors into SchemaValidationError."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ._roster import AGENT_NAMES, ROSTER
from .config import Thresholds
from .errors import SchemaValidationError

__all__ = ["AGENT_OUTPUT_SCHEMAS", "problems_of", "validate_output"]

#: The six agents' output schemas ("pineal" writes the synthesis), from the roster.
AGENT_OUTPUT_SCHEMAS: dict[str, type[BaseModel]] = {a.name: a.output_schema for a in ROSTER}


def problems_of(exc: ValidationError) -> list[str]:
    """One line per pydantic error: ``"field.path: message"`` (input values are not echoed)."""
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        msg = err["msg"].removeprefix("Value error, ")
        out.append(f"{loc}: {msg}")
    return out


def validate_output(agent: str, payload: Any, thresholds: Thresholds | None = None) -> BaseModel:
    """Validate ``payload`` against ``agent``'s schema (gate applied for Stability).

    Raises SchemaValidationError listing every problem (unknown agent included).
    """
    schema = AGENT_OUTPUT_SCHEMAS.get(agent)
    if schema is None:
        raise SchemaValidationError(
            [f"agent: unknown agent {agent!r}; expected one of {', '.join(AGENT_NAMES)}"], what="agent"
        )
    if not isinstance(payload, dict):
        raise SchemaValidationError([f"(root): expected a JSON object, got {type(payload).__name__}"])
    try:
        return schema.model_validate(payload, context={"thresholds": thresholds or Thresholds()})
    except ValidationError as exc:
        raise SchemaValidationError(problems_of(exc), what=f"{agent} output") from None
