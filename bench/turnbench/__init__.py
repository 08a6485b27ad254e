"""Turn benchmark (``bench/turn.py``): one coaching turn through the six agents, under each latency model of docs/latency.md.

Everything is real except the model: the supervisor, real ``claude`` processes (claude-agent-sdk), the
proxy and the streamable-HTTP MCP server (in this process), SQLite; the model is the scripted upstream
(``testsupport.ScriptedUpstream`` on a loopback port, in its own thread and event loop) playing a named
latency model at time_scale 1 (assumptions from docs/latency.md, not measurements of any GPU). Scripts write schema-valid outputs of realistic lengths
(token counts printed). The proxy talks OpenAI ``/v1/chat/completions`` to it, as it would to vLLM.

Per latency model, one run of each:

  ours, cold        turn 1 of a new session (our prompts, forced tool): its six processes come from the
                    runner's process pool (launcher.runner._process_pool), filled when the stack started and
                    TYPING_S before the turn (a running service has them long before); none is started
                    on the critical path. The pool's fill also warmed the model server's cache of each
                    agent's prompt head (system prompt and tools: the same for every session), as other
                    sessions' traffic keeps it on a running server; the user's context is not cached
  ours, warm        turn 2 of that session: warm processes (persistent ClaudeSDKClient)
  ours, sequential  turn 3 of that session, warm, but the six agents run one after another
                    (``SupervisorSettings(sequential=True)``): the "no parallel dispatch" baseline
  ours, prewarmed   turn 1 of another new session (a new message, so no prefix-cache head start) after
                    ``Supervisor.prewarm`` started its six processes, as ``coach chat`` does while the
                    user types (the first session's processes are stopped first to free the warm slots);
                    the message is sent TYPING_S (10 s, an assumption: typing it takes about a minute)
                    after the chat opened, or when the prewarm ended if that is later
  seed's way        turn 1 of a new session with Claude Code's default system prompt and tools (the
                    agent prompt appended), thinking on, no forced output tool and no local stop after
                    the write (so each agent makes a second model call), cold processes

Figures (seconds since the turn started, wall clock):

  coach_first_token_s  the Coach's first streamed token as Claude Code sees it (AgentStatus.first_token_s),
                       cold turn. The proxy emits a tool call whole when its stream ends, so for the
                       Coach (whose reply is its write_coach call) this is when the reply is complete;
                       the table also shows the first token at the model (upstream first byte).
  Pineal's prefill     Pineal's shared context is prefilled while the specialists run (launcher.pipeline._pineal_prefill:
                       a max_tokens 1 request marked x-coach-prefill): it is not counted in the critical
                       path (its row says when it was done); it is counted in "prompt tokens from prefix
                       cache" (the share of every prompt token processed, the prefill's included), and
                       "of Pineal's first call" is the share of Pineal's real first call found cached
  first_words_s        the Coach's first words shown to the user (TurnResult.coach_first_words_s: the
                       reply streams to the front end while write_coach's arguments arrive at the proxy,
                       once its risk assessment is complete; launcher.pipeline._reply_stream), cold turn
  synthesis_s          the synthesis delivered (TurnResult.synthesis_s), cold turn
  overhead_s           synthesis_s minus the critical path of model time, cold turn. Critical path =
                       max over Coach + the four specialists of the sum of their model-call durations
                       at the upstream (arrival to last byte, so concurrency slow-down counts as model
                       time), plus Pineal's (the sequential turn: the sum over all agents). Overhead =
                       processes, MCP, proxy, sequencer, supervisor, and this machine's CPU contention.
  speedup_vs_sequential  sequential synthesis_s / warm parallel synthesis_s
  warm_vs_cold         cold synthesis_s / warm synthesis_s (how much faster a warm turn is)
  seed_way_synthesis_s synthesis_s of the seed's way (cold, like our cold turn)

Assumptions for the seed's way (stated in the output): thinking tokens per model call are scripted as a
``<think>`` preamble (Qwen3 style; the proxy turns it into a thinking block): Coach 250, specialists
500, Pineal 600, and 40 on the second call. Our proxy strips Claude Code's per-request billing header,
so even the seed's way gets prefix-cache hits here (the cached share is printed); the seed's own stack
did not, so its real figures were worse than this replay.

Deadlines are raised to 600 s (this measures speed, not deadlines). The last line is exactly
``model=qwen3-30b-a3b@2x4090 coach_first_token_s=X synthesis_s=X overhead_s=X speedup_vs_sequential=X
warm_vs_cold=X seed_way_synthesis_s=X first_words_s=X`` (the figures of that latency model).

Usage: .venv/bin/python bench/turn.py [--models NAME ...] [--time-scale 1.0] [--skip-seed]
       [--skip-sequential] [--no-prefill] [--json FILE]

Modules, one concept each: ``payloads`` (what each agent's model writes), ``scripts`` (the scripted
upstream's per-agent answers), ``stack`` (the in-process stack and runner of one configuration),
``figures`` (one turn measured), ``run`` (the turns of one latency model), ``report`` (the table and
the last line), ``cli`` (arguments and ``main``).
"""
