"""The Ollama wire shape: ``POST {base}/api/chat`` streamed as NDJSON.

The local daemon (default ``http://localhost:11434``) needs no key and proxies ``:cloud`` models
after ``ollama signin``; a remote endpoint such as ``https://ollama.com`` takes a bearer key.
``max_tokens`` travels as ``options.num_predict``. Effort becomes ``think`` levels only for the
models that accept them (gpt-oss); other models keep their own thinking default. A conversation's
earlier exchanges travel as user and assistant messages.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ask_fable.backends.base import EventSink, OracleRequest, Reply
from ask_fable.backends.http_client import (
    HttpOracle,
    is_loopback,
    join_url,
    loads_object,
    normalize_effort,
    provider_message,
    read_to_end,
    scrub,
    text_field,
    usage_from,
)
from ask_fable.errors import UpstreamError

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

THINK_LEVEL = {"quick": "low", "standard": "medium", "deep": "high"}
#: Model name prefixes whose ``think`` accepts low/medium/high instead of a boolean.
LEVELLED_THINKING = ("gpt-oss",)


def ollama_headers(base_url: str, api_key: str | None) -> dict[str, str]:
    """Headers for an Ollama endpoint: the bearer key only for a remote host, never for the local daemon."""
    headers = {"content-type": "application/json"}
    if api_key and not is_loopback(base_url):
        headers["authorization"] = f"Bearer {api_key}"
    return headers


class OllamaOracle(HttpOracle):
    """A model served by an Ollama daemon or a remote Ollama endpoint."""

    def ensure_available(self) -> None:
        """``ollama.com`` needs ``ASK_FABLE_OLLAMA_API_KEY``; the local daemon needs nothing."""
        from urllib.parse import urlsplit

        try:
            host = (urlsplit(self.base_url).hostname or "").lower()
        except ValueError:  # a malformed base URL is reported when the call is made
            host = ""
        if not self.api_key and (host == "ollama.com" or host.endswith(".ollama.com")):
            from ask_fable.errors import NotConfigured

            raise NotConfigured(f"{self.label} at {host} needs an API key: set ASK_FABLE_OLLAMA_API_KEY",
                                hint="set ASK_FABLE_OLLAMA_API_KEY, or point ASK_FABLE_OLLAMA_BASE_URL "
                                "at the local daemon")

    def billing_hint(self) -> str:
        """Cloud models count against the ollama.com account's plan and its usage windows."""
        return ("the ollama.com account's plan does not cover this call now (a usage limit was reached or "
                "the model needs a subscription): wait for the usage window to reset or upgrade the Ollama "
                "plan at https://ollama.com/upgrade, or ask for a model pulled locally; ask-fable does not "
                "retry it or count it as an outage")

    def auth_hint(self) -> str:
        """The local daemon needs ``ollama signin`` for cloud models; a remote endpoint a valid key."""
        if is_loopback(self.base_url):
            return ("run `ollama signin` as the user the Ollama daemon runs as (cloud models need a "
                    "signed-in daemon), or ask for a model pulled locally")
        return ("set a valid ASK_FABLE_OLLAMA_API_KEY (an ollama.com API key) in the server's environment "
                "or config file")

    def build_body(self, request: OracleRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        messages = request.chat_messages()
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "options": {"num_predict": request.max_tokens or self.max_tokens or 8192},
        }
        effort = normalize_effort(request.effort) or self.effort
        if effort and self.model.startswith(LEVELLED_THINKING):
            body["think"] = THINK_LEVEL[effort]
        return body

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Answer one prompt over ``POST {base}/api/chat`` (NDJSON stream)."""
        self.ensure_available()
        body = self.build_body(request)
        effort = body.get("think")

        async def handle(response: httpx2.Response) -> Reply:
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type == "application/json":
                return self._finish(loads_object(await response.aread(), self.label, self.secrets), effort)
            return await self._read_lines(response, sink, effort)

        return await self.post(join_url(self.base_url, "api/chat"), timeout=request.timeout, handle=handle,
                               headers=ollama_headers(self.base_url, self.api_key), json=body, sink=sink)

    async def _read_lines(self, response: httpx2.Response, sink: EventSink, effort: str | None) -> Reply:
        text: list[str] = []
        thinking: list[str] = []
        final: dict[str, Any] = {}
        lines = response.aiter_lines()
        async for line in lines:
            if not line.strip():
                continue
            obj = loads_object(line, self.label, self.secrets)
            self._raise_for_error(obj)
            message = obj.get("message") or {}
            if isinstance(message.get("thinking"), str) and message["thinking"]:
                thinking.append(message["thinking"])
                await sink.reasoning(message["thinking"])
            if isinstance(message.get("content"), str):
                text.append(message["content"])
            if obj.get("done"):
                final = obj
                await read_to_end(lines)
                break
        if not final:
            # No done line: the connection dropped mid-answer.
            raise UpstreamError(f"{self.label} stream ended before completion")
        return self._reply("".join(text), "".join(thinking), final, effort)

    def _finish(self, obj: dict[str, Any], effort: str | None) -> Reply:
        self._raise_for_error(obj)
        message = obj.get("message") or {}
        return self._reply(text_field(message, "content"), text_field(message, "thinking"), obj, effort)

    def _raise_for_error(self, obj: dict[str, Any]) -> None:
        if obj.get("error"):
            raise UpstreamError(scrub(f"{self.label}: {provider_message(json.dumps(obj))}", self.secrets))

    def _reply(self, text: str, thinking: str, final: dict[str, Any], effort: str | None) -> Reply:
        if not text.strip():
            reason = final.get("done_reason") or ("stream ended early" if not final else "unknown")
            raise UpstreamError(f"{self.label} returned no answer text (done_reason={reason})")
        return Reply(text=text, model=self.model, provider=self.provider, thinking=thinking or None,
                     usage=usage_from(final.get("prompt_eval_count"), final.get("eval_count")),
                     effort=effort)
