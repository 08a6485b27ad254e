"""Scope resolution: the connection's scope comes from start-up args/env or HTTP headers, and every
key a model passes is resolved inside it (other users/sessions and path tricks are refused)."""

from __future__ import annotations

import pytest

from mcp_server import FixedScope, HeaderScope, OutOfScopeError, Scope, ScopeError, scope_token
from mcp_server._scope import scope_from_env

S = Scope.create("alice", "s1", "3", "persona")


def test_create_validates_every_part() -> None:
    with pytest.raises(ScopeError) as info:
        Scope.create("", "../x", "t 1", "hacker")
    msg = info.value.message
    assert "user is missing" in msg and "session" in msg and "turn" in msg and "agent must be one of" in msg
    assert Scope.create("u", "s").turn is None


@pytest.mark.parametrize(
    ("key", "full"),
    [
        ("shadow", "users/alice/sessions/s1/turns/3/shadow"),
        ("turns/2/persona", "users/alice/sessions/s1/turns/2/persona"),
        ("profile", "users/alice/profile"),
        ("session", "users/alice/sessions/s1"),
        ("users/alice/sessions/s1/turns/1/coach", "users/alice/sessions/s1/turns/1/coach"),
        ("/shadow/", "users/alice/sessions/s1/turns/3/shadow"),
    ],
)
def test_resolve_key_inside_scope(key: str, full: str) -> None:
    assert S.resolve_key(key) == full


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("users/bob/sessions/s1/turns/3/shadow", "out_of_scope"),
        ("users/bob/profile", "out_of_scope"),
        ("users/alice/sessions/s2/turns/3/shadow", "out_of_scope"),
        ("users/alice/sessions/s1x/turns/3/shadow", "out_of_scope"),
        ("turns/../../../bob/profile", "invalid_key"),
        ("users/alice/sessions/s1/turns/../../s2/turns/1/x", "invalid_key"),
        ("..", "invalid_key"),
        ("a b", "invalid_key"),
        ("some/relative/path", "invalid_key"),
        ("x" * 65, "invalid_key"),
    ],
)
def test_resolve_key_refuses_outside(key: str, code: str) -> None:
    with pytest.raises(OutOfScopeError) as info:
        S.resolve_key(key)
    assert info.value.code == code


def test_out_of_scope_message_does_not_leak_other_names() -> None:
    with pytest.raises(OutOfScopeError) as info:
        S.resolve_key("users/bob/profile")
    assert "bob" not in info.value.message and "a different user" in info.value.message


@pytest.mark.parametrize(
    ("prefix", "full"),
    [
        ("", "users/alice/sessions/s1/"),
        ("turns/3/", "users/alice/sessions/s1/turns/3/"),
        ("turns/1", "users/alice/sessions/s1/turns/1"),
        ("users/alice/sessions/s1", "users/alice/sessions/s1/"),
    ],
)
def test_resolve_prefix(prefix: str, full: str) -> None:
    assert S.resolve_prefix(prefix) == full


@pytest.mark.parametrize(
    "prefix", ["users/", "users/bob/", "users/alice/sessions/", "users/alice/sessions/s", "turns/../.."]
)
def test_resolve_prefix_refuses(prefix: str) -> None:
    with pytest.raises(OutOfScopeError):
        S.resolve_prefix(prefix)


def test_turnless_scope_cannot_name_current_turn() -> None:
    with pytest.raises(ScopeError):
        Scope.create("u", "s").resolve_key("shadow")


def test_header_scope() -> None:
    headers = {"x-coach-user": "u", "x-coach-session": "s", "x-coach-turn": "1", "x-coach-agent": "pineal"}
    assert HeaderScope().scope_for(headers) == Scope("u", "s", "1", "pineal")
    with pytest.raises(ScopeError):
        HeaderScope().scope_for(None)
    with pytest.raises(ScopeError):
        HeaderScope().scope_for({"x-coach-session": "s"})


def test_fixed_scope_ignores_headers() -> None:
    assert FixedScope(S).scope_for({"x-coach-user": "bob", "x-coach-session": "s9"}) == S


def test_scope_from_env_args_win() -> None:
    env = {"COACH_USER": "u", "COACH_SESSION": "s", "COACH_TURN": "7", "COACH_AGENT": "coach"}
    assert scope_from_env(env) == Scope("u", "s", "7", "coach")
    assert scope_from_env(env, user="v", agent="shadow") == Scope("v", "s", "7", "shadow")
    with pytest.raises(ScopeError):
        scope_from_env({})


def test_header_scope_with_secret_requires_matching_token() -> None:
    scopes = HeaderScope(secret="s3cret")
    headers = {"x-coach-user": "u", "x-coach-session": "s", "x-coach-turn": "1", "x-coach-agent": "coach"}
    token = scope_token("s3cret", Scope("u", "s", "1", "coach"))
    assert scopes.scope_for({**headers, "x-coach-scope-token": token}) == Scope("u", "s", "1", "coach")
    for bad in (
        {},
        {"x-coach-scope-token": ""},
        {"x-coach-scope-token": token[:-1] + "0"},
        {"x-coach-scope-token": scope_token("other", Scope("u", "s", "1", "coach"))},
    ):
        with pytest.raises(ScopeError) as info:
            scopes.scope_for({**headers, **bad})
        assert info.value.code == "scope_forbidden"
    # The token binds every part: changing the agent breaks it.
    with pytest.raises(ScopeError):
        scopes.scope_for({**headers, "x-coach-agent": "pineal", "x-coach-scope-token": token})
