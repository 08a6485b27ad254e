"""coachboard's blackboard: versioned entries with compare-and-swap, agent output schemas,
arbitration and a cross-process sequencer, on SQLite and file locks (default) or PostgreSQL (``[data]
url``; docs/postgresql.md, also the shared token budgets). No LLM; no network but PostgreSQL's.

Reference: ``docs/blackboard.md``; rules and thresholds: ``docs/coaching.md``.
"""

from ._arbitration import build_brief, fallback_synthesis, validate_synthesis
from ._backend import open_backend
from ._barrier import Barrier
from ._blackboard import Blackboard
from ._brief import (
    PRECEDENCE,
    BlockedMove,
    Brief,
    Conflict,
    MoveView,
    RejectedEntry,
    SourceRef,
    SynthesisProblem,
)
from ._keys import KeyParts, parse_key, profile_key, session_key, turn_entry_key, turn_prefix
from ._memory import MemoryStore
from ._pg_barrier import PgBarrier
from ._postgres import PostgresStore
from ._records import TurnRecord, UserProfile, merge_profile
from ._registry import AGENT_OUTPUT_SCHEMAS, validate_output
from ._roster import (
    AGENT_NAMES,
    AGENT_ORDER,
    ROSTER,
    STAGE_OF,
    SYNTHESIS_INPUTS,
    WRITE_TOOL_NAMES,
    AgentSpec,
    Stage,
    agents_at,
)
from ._schema_agents import (
    Citation,
    CoachOutput,
    Goal,
    PersonaOutput,
    PlasticityOutput,
    SynthesisOutput,
    TailoringChoice,
)
from ._schema_common import (
    TRAIT_NAMES,
    AgentName,
    EvidenceRef,
    FollowThroughStats,
    OceanTraits,
    TraitScore,
    band_for,
)
from ._schema_risk import RISK_FAMILIES, RiskAssessment, RiskFamily
from ._schema_shadow import (
    PATTERN_CLASSES,
    Commitments,
    FollowThroughFeatures,
    FollowThroughPrediction,
    ShadowOutput,
    ShadowPattern,
    follow_through_baseline,
)
from ._schema_stability import GateResult, StabilityMove, StabilityOutput, stability_gate
from ._sequencer import Sequencer, WaitResult
from ._shown_prefix import shown_prefix
from ._sqlite import SQLiteStore, open_store
from ._store import Entry, Store
from ._text import check_turn_text
from .config import Thresholds
from .errors import (
    BlackboardError,
    BudgetExhaustedError,
    InvalidKeyError,
    InvalidValueError,
    LockTimeoutError,
    SchemaValidationError,
    SessionClosedError,
    StoreUnavailableError,
    TurnAlreadyOpenError,
    TurnNotOpenError,
    VersionConflictError,
)

__all__ = [
    "AGENT_NAMES",
    "AGENT_ORDER",
    "AGENT_OUTPUT_SCHEMAS",
    "PATTERN_CLASSES",
    "PRECEDENCE",
    "RISK_FAMILIES",
    "ROSTER",
    "STAGE_OF",
    "SYNTHESIS_INPUTS",
    "TRAIT_NAMES",
    "WRITE_TOOL_NAMES",
    "AgentName",
    "AgentSpec",
    "Barrier",
    "Blackboard",
    "BlackboardError",
    "BlockedMove",
    "Brief",
    "BudgetExhaustedError",
    "Citation",
    "CoachOutput",
    "Commitments",
    "Conflict",
    "Entry",
    "EvidenceRef",
    "FollowThroughFeatures",
    "FollowThroughPrediction",
    "FollowThroughStats",
    "GateResult",
    "Goal",
    "InvalidKeyError",
    "InvalidValueError",
    "KeyParts",
    "LockTimeoutError",
    "MemoryStore",
    "MoveView",
    "OceanTraits",
    "PersonaOutput",
    "PgBarrier",
    "PlasticityOutput",
    "PostgresStore",
    "RejectedEntry",
    "RiskAssessment",
    "RiskFamily",
    "SQLiteStore",
    "SchemaValidationError",
    "Sequencer",
    "SessionClosedError",
    "ShadowOutput",
    "ShadowPattern",
    "SourceRef",
    "StabilityMove",
    "StabilityOutput",
    "Stage",
    "Store",
    "StoreUnavailableError",
    "SynthesisOutput",
    "SynthesisProblem",
    "TailoringChoice",
    "Thresholds",
    "TraitScore",
    "TurnAlreadyOpenError",
    "TurnNotOpenError",
    "TurnRecord",
    "UserProfile",
    "VersionConflictError",
    "WaitResult",
    "agents_at",
    "band_for",
    "build_brief",
    "check_turn_text",
    "fallback_synthesis",
    "follow_through_baseline",
    "merge_profile",
    "open_backend",
    "open_store",
    "parse_key",
    "profile_key",
    "session_key",
    "shown_prefix",
    "stability_gate",
    "turn_entry_key",
    "turn_prefix",
    "validate_output",
    "validate_synthesis",
]
