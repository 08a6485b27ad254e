"""coachboard's blackboard: versioned entries with compare-and-swap, agent output schemas,
arbitration and a cross-process sequencer, on SQLite and file locks (default) or PostgreSQL (``[data]
url``; docs/postgresql.md, also the shared token budgets). No LLM; no network but PostgreSQL's.

Reference: README "blackboard" section; rules and thresholds: ``../shared/COACHING.md``.
"""

from ._arbitration import SPECIALISTS, build_brief, fallback_synthesis, validate_synthesis
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
    AGENT_NAMES,
    TRAIT_NAMES,
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
    "AGENT_OUTPUT_SCHEMAS",
    "PATTERN_CLASSES",
    "PRECEDENCE",
    "RISK_FAMILIES",
    "SPECIALISTS",
    "TRAIT_NAMES",
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
    "band_for",
    "build_brief",
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
