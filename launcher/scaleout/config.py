"""``[broker]`` in coach.toml: RabbitMQ for turn jobs (docs/scale-out.md). ``url`` (or
``COACH_BROKER_URL``, which wins; or ``--broker``) turns ``coach run`` and ``coach serve``'s turn endpoint
into front ends that publish jobs for ``coach worker`` processes; unset, turns run in-process."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ENV_BROKER_URL", "BrokerConfig"]

ENV_BROKER_URL = "COACH_BROKER_URL"
_PREFIX = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")


class BrokerConfig(BaseModel):
    """``url``: ``amqp://user:password@host:port/vhost``; ``prefix``: the exchanges' and queues' names
    start with it (one per deployment); ``delivery_limit``: deliveries of a job whose consumer died
    before the broker dead-letters it (the job is then marked failed); ``lease_ttl_s``: how long a
    session stays with a worker that stopped renewing (a dead worker's sessions move after it);
    ``sessions``: warm sessions per worker (six ``claude`` processes each; also the broker prefetch);
    ``metrics_port``: ``coach worker``'s ``/metrics`` (0 = any free port); ``turns_port``: ``coach
    serve``'s ``POST /v1/turns`` (server-sent events)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    prefix: str = "coach"
    delivery_limit: int = Field(default=5, ge=1, le=100)
    lease_ttl_s: float = Field(default=15.0, gt=0.5, le=3600)
    sessions: int = Field(default=2, ge=1, le=64)
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    turns_port: int = Field(default=8090, ge=0, le=65535)

    @field_validator("url")
    @classmethod
    def _amqp(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("amqp://", "amqps://")):
            raise ValueError(f"not an AMQP URL (got {value[:80]!r}): use amqp://user:password@host:5672/vhost")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not _PREFIX.fullmatch(value):
            raise ValueError("use 1-64 characters from A-Z a-z 0-9 _ . -")
        return value
