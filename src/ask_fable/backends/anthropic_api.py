"""The Anthropic Messages wire shape (GLM and DeepSeek speak it).

``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version``, streamed as server-sent
events so thinking is forwarded live and long answers never sit idle. Effort maps onto the
extended-thinking budget; an unset effort leaves thinking to the provider's default. A conversation's
earlier exchanges travel as alternating user and assistant messages.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ask_fable.backends.base import EventSink, OracleRequest, Reply
from ask_fable.backends.http_client import (
    HttpOracle,
    bad_body,
    is_event_stream,
    iter_events,
    loads_object,
    normalize_effort,
    object_field,
    provider_message,
    read_to_end,
    scrub,
    usage_from,
    versioned_url,
)
from ask_fable.errors import UpstreamError

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

ANTHROPIC_VERSION = "2023-06-01"
#: Thinking budget (tokens) per effort preset; clamped below ``max_tokens``.
THINKING_BUDGET = {"quick": 2048, "standard": 8192, "deep": 24576}
MIN_THINKING_BUDGET = 1024


def thinking_budget(effort: str | None, max_tokens: int) -> int | None:
    """The ``budget_tokens`` for ``effort``, or ``None`` when thinking should not be requested."""
    if effort is None:
        return None
    budget = min(THINKING_BUDGET[effort], max_tokens - MIN_THINKING_BUDGET)
    return budget if budget >= MIN_THINKING_BUDGET else None


class AnthropicMessagesOracle(HttpOracle):
    """An oracle behind an Anthropic-Messages-compatible endpoint."""

    def build_body(self, request: OracleRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        effort = normalize_effort(request.effort) or self.effort
        max_tokens = request.max_tokens or self.max_tokens or 8192
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": request.chat_messages(),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        budget = thinking_budget(effort, max_tokens)
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Answer one prompt over ``POST {base}/v1/messages`` (streamed)."""
        self.ensure_available()
        body = self.build_body(request)
        effort = normalize_effort(request.effort) or self.effort
        headers = {
            "x-api-key": self.api_key or "",
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }

        async def handle(response: httpx2.Response) -> Reply:
            if is_event_stream(response):
                return await self._read_stream(response, sink, effort)
            return self._read_json(loads_object(await response.aread(), self.label, self.secrets), effort)

        return await self.post(versioned_url(self.base_url, "messages"), timeout=request.timeout,
                               handle=handle, headers=headers, json=body, sink=sink)

    def _reply(self, text: str, thinking: str, usage: dict[str, Any], stop: str | None,
               effort: str | None) -> Reply:
        if not text.strip():
            raise UpstreamError(f"{self.label} returned no answer text (stop_reason={stop or 'unknown'})")
        return Reply(text=text, model=self.model, provider=self.provider, thinking=thinking or None,
                     usage=usage_from(usage.get("input_tokens"), usage.get("output_tokens")),
                     effort=effort)

    def _read_json(self, data: dict[str, Any], effort: str | None) -> Reply:
        if data.get("type") == "error" or "error" in data:
            raise UpstreamError(scrub(f"{self.label}: {provider_message(json.dumps(data))}", self.secrets))
        content = data.get("content")
        if not isinstance(content, list):
            raise bad_body(self.label, "no content list in the message", self.secrets)
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        thinking = "".join(b.get("thinking", "") for b in content
                           if isinstance(b, dict) and b.get("type") == "thinking")
        usage = object_field(data, "usage")
        return self._reply(text, thinking, usage, data.get("stop_reason"), effort)

    async def _read_stream(self, response: httpx2.Response, sink: EventSink, effort: str | None) -> Reply:
        text: list[str] = []
        thinking: list[str] = []
        usage: dict[str, Any] = {}
        stop: str | None = None
        finished = False
        async with aclosing(iter_events(response, self.label, self.secrets)) as events:
            async for event, data in events:
                obj = loads_object(data, self.label, self.secrets)
                kind = obj.get("type", event)
                if kind == "message_start":
                    message = obj.get("message") or {}
                    usage.update(message.get("usage") or {})
                elif kind == "content_block_start":
                    block = obj.get("content_block") or {}
                    if block.get("type") == "text" and block.get("text"):
                        text.append(block["text"])
                    elif block.get("type") == "thinking" and block.get("thinking"):
                        thinking.append(block["thinking"])
                        await sink.reasoning(block["thinking"])
                elif kind == "content_block_delta":
                    delta = obj.get("delta") or {}
                    if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                        text.append(delta["text"])
                    elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
                        thinking.append(delta["thinking"])
                        await sink.reasoning(delta["thinking"])
                elif kind == "message_delta":
                    usage.update(obj.get("usage") or {})
                    stop = (obj.get("delta") or {}).get("stop_reason") or stop
                elif kind == "error":
                    detail = f"{self.label} stream error: {provider_message(data)}"
                    raise UpstreamError(scrub(detail, self.secrets))
                elif kind == "message_stop":
                    finished = True
                    await read_to_end(events)
                    break
        if not finished:
            # No message_stop: the connection dropped mid-answer; half an answer is no answer.
            raise UpstreamError(f"{self.label} stream ended before completion")
        return self._reply("".join(text), "".join(thinking), usage, stop, effort)
