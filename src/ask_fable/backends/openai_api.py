"""The OpenAI chat-completions wire shape (Atlas Cloud and OpenRouter speak it).

``POST {base}/v1/chat/completions`` — or ``{base}/chat/completions`` when the base URL already
ends in a version, as OpenRouter's ``/api/v1`` does — with a bearer key, streamed as server-sent
events. Reasoning deltas (``reasoning`` or ``reasoning_content``) go to the sink live. A
conversation's earlier exchanges travel as user and assistant messages after the system message.

Effort: Atlas takes ``reasoning_effort`` low/medium/high; OpenRouter takes ``reasoning.effort``,
clamped to the efforts the model's catalog entry lists, and reports the call's dollar cost when
asked for usage accounting (``usage: {include: true}``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ask_fable.backends.base import EventSink, OracleRequest, Reply
from ask_fable.backends.http_client import (
    HttpOracle,
    bad_body,
    is_event_stream,
    iter_events,
    loads_object,
    normalize_effort,
    provider_message,
    read_to_end,
    scrub,
    text_field,
    usage_from,
    versioned_url,
)
from ask_fable.errors import UpstreamError

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

#: Effort preset → OpenAI-style reasoning effort.
WIRE_EFFORT = {"quick": "low", "standard": "medium", "deep": "high"}


class OpenAIChatOracle(HttpOracle):
    """An oracle behind an OpenAI-chat-compatible endpoint (``reasoning_effort`` knob)."""

    extra_headers: ClassVar[Mapping[str, str]] = {}

    async def wire_effort(self, effort: str | None, timeout: float) -> str | None:
        """The provider-level effort sent for preset ``effort`` (``None``: send no effort)."""
        return WIRE_EFFORT[effort] if effort else None

    def build_body(self, request: OracleRequest, wire: str | None) -> dict[str, Any]:
        """The JSON body sent for ``request`` at provider effort ``wire``."""
        messages = request.chat_messages()
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            body["max_tokens"] = max_tokens
        if wire:
            body["reasoning_effort"] = wire
        return body

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Answer one prompt over ``POST …/chat/completions`` (streamed)."""
        self.ensure_available()
        started = anyio.current_time()
        effort = normalize_effort(request.effort) or self.effort
        wire = await self.wire_effort(effort, min(10.0, request.timeout / 4))
        body = self.build_body(request, wire)
        headers = {
            "authorization": f"Bearer {self.api_key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self.extra_headers,
        }

        async def handle(response: httpx2.Response) -> Reply:
            if is_event_stream(response):
                return await self._read_stream(response, sink, wire)
            return self._read_json(loads_object(await response.aread(), self.label, self.secrets), wire)

        remaining = max(0.001, request.timeout - (anyio.current_time() - started))
        return await self.post(versioned_url(self.base_url, "chat/completions"), timeout=remaining,
                               handle=handle, headers=headers, json=body, sink=sink)

    def _reply(self, text: str, thinking: str, usage: Any, finish: str | None, wire: str | None) -> Reply:
        if not text.strip():
            raise UpstreamError(f"{self.label} returned no answer text (finish_reason={finish or 'unknown'})")
        usage = usage if isinstance(usage, dict) else {}
        details = usage.get("completion_tokens_details")
        reasoning_tokens = details.get("reasoning_tokens") if isinstance(details, dict) else None
        return Reply(text=text, model=self.model, provider=self.provider, thinking=thinking or None,
                     usage=usage_from(usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                      reasoning_tokens, usage.get("cost")),
                     effort=wire)

    def _read_json(self, data: dict[str, Any], wire: str | None) -> Reply:
        if "error" in data:
            raise UpstreamError(scrub(f"{self.label}: {provider_message(json.dumps(data))}", self.secrets))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise bad_body(self.label, "no choices in the completion", self.secrets)
        message = choices[0].get("message") or {}
        text = text_field(message, "content")
        thinking = message.get("reasoning") or message.get("reasoning_content") or ""
        return self._reply(text, thinking if isinstance(thinking, str) else "", data.get("usage"),
                           choices[0].get("finish_reason"), wire)

    async def _read_stream(self, response: httpx2.Response, sink: EventSink, wire: str | None) -> Reply:
        text: list[str] = []
        thinking: list[str] = []
        usage: Any = None
        finish: str | None = None
        done = False
        async with aclosing(iter_events(response, self.label, self.secrets)) as events:
            async for _event, data in events:
                if data.strip() == "[DONE]":
                    done = True
                    await read_to_end(events)
                    break
                obj = loads_object(data, self.label, self.secrets)
                if obj.get("error"):
                    detail = f"{self.label} stream error: {provider_message(data)}"
                    raise UpstreamError(scrub(detail, self.secrets))
                if obj.get("usage"):
                    usage = obj["usage"]
                for choice in obj.get("choices") or []:
                    if not isinstance(choice, dict):
                        continue
                    delta = choice.get("delta") or {}
                    piece = delta.get("content")
                    if isinstance(piece, str):
                        text.append(piece)
                    reasoning = delta.get("reasoning") or delta.get("reasoning_content")
                    if isinstance(reasoning, str) and reasoning:
                        thinking.append(reasoning)
                        await sink.reasoning(reasoning)
                    finish = choice.get("finish_reason") or finish
        if not done and finish is None:
            # Neither [DONE] nor a finish_reason: the connection dropped mid-answer.
            raise UpstreamError(f"{self.label} stream ended before completion")
        return self._reply("".join(text), "".join(thinking), usage, finish, wire)


class AtlasOracle(OpenAIChatOracle):
    """Atlas Cloud: OpenAI chat with ``reasoning_effort``."""


class OpenRouterOracle(OpenAIChatOracle):
    """OpenRouter: ``reasoning.effort`` clamped to the model's catalog entry, real dollar cost."""

    extra_headers: ClassVar[Mapping[str, str]] = {"x-title": "ask-fable"}

    async def wire_effort(self, effort: str | None, timeout: float) -> str | None:
        """Clamp the preset's effort to the efforts the model's catalog entry supports."""
        wanted = WIRE_EFFORT[effort] if effort else None
        if wanted is None:
            return None
        from ask_fable.backends.catalogs import clamp_effort, openrouter_entry

        entry = await openrouter_entry(self.base_url, self.model, timeout=timeout, transport=self.transport,
                                       resources=self.resources)
        return clamp_effort(wanted, entry)

    def build_body(self, request: OracleRequest, wire: str | None) -> dict[str, Any]:
        """OpenAI chat body plus OpenRouter's ``reasoning`` object and usage accounting."""
        body = super().build_body(request, None)
        if wire:
            body["reasoning"] = {"effort": wire}
        body["usage"] = {"include": True}
        return body
