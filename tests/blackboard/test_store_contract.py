"""The ONE contract suite every Store backend must pass (run against MemoryStore and SQLiteStore)."""

from __future__ import annotations

import itertools
import math

import pytest

from blackboard import (
    Entry,
    InvalidKeyError,
    InvalidValueError,
    Store,
    StoreUnavailableError,
    VersionConflictError,
    profile_key,
    session_key,
    turn_entry_key,
)

K = turn_entry_key("u1", "s1", "t000001", "shadow")
K2 = turn_entry_key("u1", "s1", "t000001", "persona")


def test_implements_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_read_missing_is_none(store: Store) -> None:
    assert store.read(K) is None
    assert store.history(K) == []
    assert store.list("users/") == []


def test_create_then_read_returns_value_version_author_timestamps(store: Store) -> None:
    e = store.write(K, {"a": 1, "text": "héllo ✓"}, expected_version=0, author="shadow")
    assert (e.key, e.value, e.version, e.author) == (K, {"a": 1, "text": "héllo ✓"}, 1, "shadow")
    assert e.created_at == e.updated_at > 0
    got = store.read(K)
    assert got == e


def test_cas_update_increments_version_and_keeps_created_at(store: Store) -> None:
    e1 = store.write(K, {"n": 1}, expected_version=0, author="a")
    e2 = store.write(K, {"n": 2}, expected_version=1, author="b")
    assert e2.version == 2 and e2.author == "b" and e2.value == {"n": 2}
    assert e2.created_at == e1.created_at and e2.updated_at >= e1.updated_at
    assert e2.seq > e1.seq


def test_create_only_conflicts_with_existing_key_and_writes_nothing(store: Store) -> None:
    store.write(K, {"n": 1}, expected_version=0, author="a")
    with pytest.raises(VersionConflictError) as info:
        store.write(K, {"n": 99}, expected_version=0, author="b")
    assert info.value.current_version == 1 and info.value.expected_version == 0
    assert info.value.code == "version_conflict" and info.value.retryable
    assert store.read(K).value == {"n": 1}  # type: ignore[union-attr]
    assert len(store.history(K)) == 1


@pytest.mark.parametrize("expected", [1, 5])
def test_stale_or_future_expected_version_conflicts(store: Store, expected: int) -> None:
    store.write(K, {"n": 1}, expected_version=0, author="a")
    store.write(K, {"n": 2}, expected_version=1, author="a")
    with pytest.raises(VersionConflictError) as info:
        store.write(K, {"n": 3}, expected_version=expected, author="a")
    assert info.value.current_version == 2
    assert store.read(K).value == {"n": 2}  # type: ignore[union-attr]


def test_update_of_missing_key_conflicts_with_current_version_zero(store: Store) -> None:
    with pytest.raises(VersionConflictError) as info:
        store.write(K, {"n": 1}, expected_version=3, author="a")
    assert info.value.current_version == 0
    assert store.read(K) is None and store.history(K) == []


def test_history_is_every_version_oldest_first(store: Store) -> None:
    for i in range(4):
        store.write(K, {"n": i}, expected_version=i, author=f"w{i}")
    hist = store.history(K)
    assert [h.version for h in hist] == [1, 2, 3, 4]
    assert [h.value for h in hist] == [{"n": i} for i in range(4)]
    assert [h.author for h in hist] == ["w0", "w1", "w2", "w3"]
    assert all(a.seq < b.seq for a, b in itertools.pairwise(hist))
    assert hist[-1] == store.read(K)


def test_list_by_literal_prefix_latest_only_sorted(store: Store) -> None:
    keys = [
        turn_entry_key("u1", "s1", "t2", "b"),
        turn_entry_key("u1", "s1", "t1", "z"),
        turn_entry_key("u1", "s1", "t1", "a"),
        turn_entry_key("u1", "s10", "t1", "a"),
        turn_entry_key("u_x", "s1", "t1", "a"),
        profile_key("u1"),
    ]
    for k in keys:
        store.write(k, {"k": k}, expected_version=0, author="a")
    store.write(keys[2], {"k": "new"}, expected_version=1, author="a")
    got = store.list("users/u1/sessions/s1/")
    assert [e.key for e in got] == sorted(keys[:3])
    assert {e.key: e.version for e in got}[keys[2]] == 2
    assert [e.key for e in store.list("users/u1/sessions/s1")] == sorted(keys[:4])
    # "_" and "%" are literal characters, not wildcards
    assert [e.key for e in store.list("users/u_")] == [keys[4]]
    assert store.list("users/u%") == []
    assert len(store.list("")) == len(keys)


def test_values_are_copies(store: Store) -> None:
    value = {"items": [1, 2], "nested": {"x": 1}}
    e = store.write(K, value, expected_version=0, author="a")
    value["items"].append(3)
    e.value["nested"]["x"] = 42
    got = store.read(K)
    assert got is not None and got.value == {"items": [1, 2], "nested": {"x": 1}}
    got.value["items"].clear()
    assert store.read(K).value["items"] == [1, 2]  # type: ignore[union-attr]


def test_json_normalisation_is_the_same_for_every_backend(store: Store) -> None:
    e = store.write(K, {"t": (1, 2), "f": 1.5, "n": None, "b": True}, expected_version=0, author="a")
    assert e.value == {"t": [1, 2], "f": 1.5, "n": None, "b": True}
    assert store.read(K).value == e.value  # type: ignore[union-attr]


def test_seq_is_strictly_increasing_across_keys(store: Store) -> None:
    seqs = [store.write(k, {}, expected_version=0, author="a").seq for k in (K, K2, session_key("u1", "s1"))]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


@pytest.mark.parametrize(
    "key",
    [
        "",
        "users",
        "users/../profile",
        "users/u1/../../etc/profile",
        "users/u1/sessions/s1/turns/t1/..",
        "users/u1/sessions/s1/turns/t1/.",
        "users//profile",
        "users/u1/profile/",
        "users/u 1/profile",
        "users/u1\x00/profile",
        "users/u1/sessions/s1/turns/t1/a/b",
        "/users/u1/profile",
        "users/" + "x" * 65 + "/profile",
        "other/u1/profile",
    ],
)
def test_invalid_keys_are_refused_everywhere(store: Store, key: str) -> None:
    with pytest.raises(InvalidKeyError):
        store.write(key, {}, expected_version=0, author="a")
    with pytest.raises(InvalidKeyError):
        store.read(key)
    with pytest.raises(InvalidKeyError):
        store.history(key)


@pytest.mark.parametrize("prefix", ["users/../", "users/u1/\x00", "x" * 401])
def test_invalid_prefixes_are_refused(store: Store, prefix: str) -> None:
    with pytest.raises(InvalidKeyError):
        store.list(prefix)


@pytest.mark.parametrize(
    ("value", "expected_version", "author"),
    [
        ([1, 2], 0, "a"),
        ("text", 0, "a"),
        ({"x": math.nan}, 0, "a"),
        ({"x": object()}, 0, "a"),
        ({"x": "y" * 1_000_001}, 0, "a"),
        ({}, -1, "a"),
        ({}, True, "a"),
        ({}, 1.0, "a"),
        ({}, 0, ""),
        ({}, 0, "bad author"),
        ({}, 0, "x" * 65),
    ],
)
def test_invalid_values_are_refused_and_nothing_is_stored(
    store: Store, value: object, expected_version: object, author: str
) -> None:
    with pytest.raises(InvalidValueError):
        store.write(K, value, expected_version=expected_version, author=author)  # type: ignore[arg-type]
    assert store.read(K) is None and store.history(K) == []


def test_closed_store_refuses_calls(store: Store) -> None:
    store.write(K, {}, expected_version=0, author="a")
    store.close()
    store.close()  # idempotent
    for call in (lambda: store.read(K), lambda: store.list(""), lambda: store.history(K)):
        with pytest.raises(StoreUnavailableError):
            call()
    with pytest.raises(StoreUnavailableError):
        store.write(K2, {}, expected_version=0, author="a")


def test_entry_is_immutable() -> None:
    e = Entry("users/u/profile", {}, 1, "a", 0.0, 0.0, 1)
    with pytest.raises(AttributeError):
        e.version = 2  # type: ignore[misc]
