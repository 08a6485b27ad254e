"""The scripted upstream as a real uvicorn server on a loopback port (background thread)."""

from __future__ import annotations

import threading

import anyio
import httpx
import pytest

from testsupport import QWEN3_235B_A40, Hang, ScriptedUpstream, Text, ThreadedServer, UpstreamStartError

pytestmark = pytest.mark.e2e


def test_start_stop_and_context_manager() -> None:
    up = ScriptedUpstream({"coach": [Text("hi")]})
    with up:
        url = up.base_url
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "/health").json()["status"] == "ok"
        r = httpx.post(
            url + "/v1/messages",
            headers={"x-coach-agent": "coach"},
            json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}]},
        )
        assert r.json()["content"][0]["text"] == "hi"
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health")
    up.stop()  # idempotent


def test_a_prefill_gets_one_token_whatever_the_agents_script_says() -> None:
    """The proxy's prefill (x-coach-prefill, max_tokens 1) is answered as a model server would, without
    the agent's script, which is written for its real requests (one that raises must not be consulted)."""

    def pineal(request: object) -> Text:
        raise AssertionError("the script must not see a prefill")

    with ScriptedUpstream({"pineal": pineal}) as up:
        body = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "shared context"}]}
        r = httpx.post(
            up.base_url + "/v1/messages",
            headers={"x-coach-agent": "pineal", "x-coach-prefill": "1"},
            json=body,
        )
        assert r.status_code == 200 and r.json()["content"][0]["text"] == "OK"
        (rec,) = up.model_calls("pineal")
        assert rec.headers["x-coach-prefill"] == "1" and rec.status == 200
        # Without the header the script is consulted (and here it fails: a 500 from the upstream).
        r = httpx.post(up.base_url + "/v1/messages", headers={"x-coach-agent": "pineal"}, json=body)
        assert r.status_code == 500


def test_base_url_before_start_is_an_error() -> None:
    with pytest.raises(UpstreamStartError):
        _ = ThreadedServer(app=None).base_url


@pytest.mark.anyio
async def test_stream_first_byte_over_real_http_follows_the_model() -> None:
    scale = 0.2
    up = ScriptedUpstream({"coach": [Text("word " * 40)]}, latency=QWEN3_235B_A40, time_scale=scale)
    with up:
        prompt = "x" * 6000  # ~1500 tokens => TTFT 1.2 model s
        async with httpx.AsyncClient(base_url=up.base_url) as c:
            start = anyio.current_time()
            first = None
            async with c.stream(
                "POST",
                "/v1/chat/completions",
                headers={"x-coach-agent": "coach"},
                json={"model": "m", "stream": True, "messages": [{"role": "user", "content": prompt}]},
            ) as r:
                async for line in r.aiter_lines():
                    if first is None and line.startswith("data:"):
                        first = anyio.current_time() - start
            total = anyio.current_time() - start
    assert first is not None
    expected_ttft = QWEN3_235B_A40.ttft_s(1500 + 10) * scale
    assert expected_ttft - 0.02 <= first <= expected_ttft * 1.5 + 0.15
    (rec,) = up.model_calls()
    assert rec.first_byte_at is not None and rec.finished_at is not None
    assert total >= expected_ttft + QWEN3_235B_A40.decode_s(rec.output_tokens) * scale - 0.02


def test_hang_after_first_token_is_released_by_stop() -> None:
    up = ScriptedUpstream({"shadow": [Hang(after_first_token=True)]})
    url = up.start()
    got: list[str] = []
    done = threading.Event()

    def client() -> None:
        try:
            with httpx.stream(
                "POST",
                url + "/v1/messages",
                headers={"x-coach-agent": "shadow"},
                timeout=30,
                json={
                    "model": "m",
                    "max_tokens": 50,
                    "stream": True,
                    "messages": [{"role": "user", "content": "q"}],
                },
            ) as r:
                for line in r.iter_lines():
                    got.append(line)
        except httpx.HTTPError:
            pass
        finally:
            done.set()

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    assert up.wait_for(lambda rs: any(r.first_byte_at for r in rs), timeout_s=10)
    assert not done.wait(0.3)  # hanging mid-stream
    up.stop()
    assert done.wait(10)
    assert any("text_delta" in line for line in got) and not any("message_stop" in line for line in got)


def test_subprocess_upstream_plays_scripts_and_serves_records() -> None:
    from testsupport.process import ScriptedUpstreamProcess

    with ScriptedUpstreamProcess(
        {"coach": [Text("from child")]}, latency="qwen3-30b-a3b@2x4090", time_scale=0.01
    ) as up:
        body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}]}
        r = httpx.post(up.base_url + "/v1/messages", headers={"x-coach-agent": "coach"}, json=body)
        assert r.json()["content"][0]["text"] == "from child"
        up.set_scripts({"coach": [Text("replaced")]})
        r = httpx.post(up.base_url + "/v1/messages", headers={"x-coach-agent": "coach"}, json=body)
        assert r.json()["content"][0]["text"] == "replaced"
        records = up.requests()
        assert [rec["step"]["text"] for rec in records] == ["from child", "replaced"]
        assert records[0]["agent"] == "coach" and records[0]["status"] == 200
        assert httpx.get(up.base_url + "/health").json()["latency_model"] == "qwen3-30b-a3b@2x4090"
        bad = httpx.post(up.base_url + "/_scripted/scripts", json={"coach": [{"type": "nope"}]})
        assert bad.status_code == 400 and "unknown step type" in bad.json()["error"]
        up.reset()
        assert up.requests() == []
        url = up.base_url
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health")
