"""proxy._local_commands: Claude Code's record of a pooled process's empty ``/clear`` never reaches the
model; other text, and a /clear with arguments or output, does."""

from __future__ import annotations

from typing import Any

import pytest

from proxy._local_commands import strip_clear_records

from .fakes import FakeUpstream, Sse, make_config, msg_body, proxy_client, text_chunks

CAVEAT = (
    "<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a "
    "request, and its output goes straight to the user. It's recorded here as context for later "
    "messages.</local-command-caveat>\n"
)
COMMAND = (
    "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n"
    "            <command-args></command-args>\n"
)
STDOUT = "<local-command-stdout></local-command-stdout>\n"


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [_text(t) for t in texts]}


def test_the_record_of_an_empty_clear_is_removed_and_nothing_else() -> None:
    messages = [_user("<system-reminder>env</system-reminder>\n", CAVEAT, COMMAND, STDOUT, "# Context\nhi")]
    assert strip_clear_records(messages) == 1
    assert [b["text"] for b in messages[0]["content"]] == [
        "<system-reminder>env</system-reminder>\n",
        "# Context\nhi",
    ]


def test_a_clear_with_output_or_the_words_inside_other_text_stay() -> None:
    with_output = [_user(CAVEAT, COMMAND, "<local-command-stdout>cleared 3</local-command-stdout>\n", "x")]
    quoted = [_user("what does " + CAVEAT + COMMAND + STDOUT + " mean?")]
    assistant = [{"role": "assistant", "content": [_text(CAVEAT), _text(COMMAND), _text(STDOUT)]}]
    for messages in (with_output, quoted, assistant):
        before = [dict(m, content=list(m["content"])) for m in messages]
        assert strip_clear_records(messages) == 0 and messages == before


@pytest.mark.anyio
async def test_an_agents_request_reaches_the_upstream_without_the_record() -> None:
    import anyio

    up = FakeUpstream(lambda b: Sse(text_chunks("ok")))
    body = msg_body("unused")
    body["messages"] = [
        {"role": "user", "content": [_text(CAVEAT), _text(COMMAND), _text(STDOUT), _text("hi")]}
    ]
    async with proxy_client(up, make_config()) as c:
        await c.post("/v1/messages", json=body, headers={"x-coach-agent": "coach", "x-coach-user": "u1"})
    await anyio.lowlevel.checkpoint()
    (call,) = up.calls()
    sent = str(call.json["messages"])
    assert "local-command" not in sent and "/clear" not in sent and "hi" in sent
