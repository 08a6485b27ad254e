"""``POST /v1/turns`` refuses a body whose fields are not JSON strings, saying which field and the shape,
before any job is made: a number or null was turned into the turn text "5" or "None" and run as a turn."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from launcher.scaleout.http import turns_app

SECRET = "s" * 32


class _NoJobs:
    """Job rows and broker that must not be reached: a refused body makes no job and publishes nothing."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store or broker was used ({name}) for a refused body")


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ({"user": "ana", "session": "s1", "message": 5}, "'message' is a JSON number, not a string"),
        ({"user": "ana", "session": "s1", "message": None}, "'message' is a JSON null, not a string"),
        ({"user": "ana", "session": "s1", "message": ["hi"]}, "'message' is a JSON array, not a string"),
        ({"user": 7, "session": "s1", "message": "hi"}, "'user' is a JSON number, not a string"),
        ({"user": "ana", "message": "hi"}, "'session' is missing"),
        ({"user": "ana", "session": "s1", "message": "hi", "job_id": 12}, "'job_id' is a JSON number"),
        ([1, 2], "the body is not a JSON object"),
    ],
)
def test_a_field_that_is_not_a_json_string_is_refused_with_400_naming_it(body: Any, what: str) -> None:
    client = TestClient(turns_app(_NoJobs(), _NoJobs(), SECRET))
    res = client.post("/v1/turns", json=body, headers={"Authorization": f"Bearer {SECRET}"})
    assert res.status_code == 400, res.text
    err = res.json()["error"]
    assert err.startswith(what) and '"message": "..."' in err


def test_a_body_that_is_not_utf8_json_is_refused_with_400() -> None:
    client = TestClient(turns_app(_NoJobs(), _NoJobs(), SECRET))
    res = client.post(
        "/v1/turns",
        content=b'{"user": "ana", "session": "s1", "message": "caf\xe9"}',
        headers={"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"},
    )
    assert res.status_code == 400 and res.json()["error"].startswith("the body is not UTF-8 JSON")
