"""Post-ready functional checks: reasoning separated from content, tool calls parsed."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from coldwatch.http import BODY_CAP, _json, _request, deadline_scope, redact

CHECK_LIMIT = 120.0
"""Default total time for one check's exchange (256 tokens from a server just out of warm-up)."""

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _message(status: int, body: bytes) -> tuple[dict[str, Any] | None, str]:
    if status != 200:
        return None, f"/v1/chat/completions answered {status}: {body[:200]!r}"
    data = _json(body) if len(body) <= BODY_CAP else None
    try:
        msg = data["choices"][0]["message"]  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        return None, f"no choices[0].message in the answer: {body[:200]!r}"
    if not isinstance(msg, dict):
        return None, "choices[0].message is not an object"
    return msg, ""


def run_check(
    name: str, client: httpx.Client, base: str, model: str, headers: dict[str, str], deadline: float | None = None
) -> tuple[bool, str]:
    """One check -> (passed, what came back); the exchange is over by ``deadline`` (a
    time.monotonic() instant) or within CHECK_LIMIT seconds, however slowly the server sends."""
    messages = [{"role": "user", "content": "What is 2+2? Think briefly, then answer."}]
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": 256, "temperature": 0}
    if name == "tools":
        body["messages"] = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
        body["tools"] = [TOOL]
    start = time.monotonic()
    end = start + CHECK_LIMIT if deadline is None else min(deadline, start + CHECK_LIMIT)
    try:
        with deadline_scope(end):
            status, raw = _request(client, "POST", base + "/v1/chat/completions", headers, body)
    except httpx.TimeoutException:
        if time.monotonic() >= end:
            return False, f"check {name}: no complete answer within {end - start:.1f}s (the deadline)"
        return False, f"check {name}: no answer within the request timeout"
    except (httpx.HTTPError, OSError, ValueError) as exc:
        return False, redact(f"check {name}: request failed: {type(exc).__name__}: {exc}", headers)
    msg, problem = _message(status, raw)
    if msg is None:
        return False, f"check {name}: {problem}"
    if name == "reasoning":
        rc, content = msg.get("reasoning_content"), msg.get("content")
        if not isinstance(rc, str) or not rc.strip():
            return False, f"check reasoning: no reasoning_content (content={str(content)[:120]!r})"
        if isinstance(content, str) and rc.strip() and rc.strip() in content:
            return False, "check reasoning: reasoning text is repeated inside content"
        if isinstance(content, str) and "<think>" in content:
            return False, "check reasoning: content still carries <think> tags"
        return True, f"check reasoning: reasoning_content {len(rc)} chars, content separate"
    calls = msg.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return False, f"check tools: no tool_calls (content={str(msg.get('content'))[:120]!r})"
    fn = calls[0].get("function") if isinstance(calls[0], dict) else None
    if not isinstance(fn, dict) or fn.get("name") != "get_weather":
        return False, f"check tools: unexpected tool call {str(calls[0])[:160]}"
    try:
        args = json.loads(fn.get("arguments") or "")
    except (TypeError, ValueError):
        return False, f"check tools: arguments are not JSON: {str(fn.get('arguments'))[:120]!r}"
    if not isinstance(args, dict):
        return False, "check tools: arguments are not a JSON object"
    return True, f"check tools: get_weather({json.dumps(args)[:80]})"
