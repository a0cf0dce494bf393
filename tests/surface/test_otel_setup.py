"""When a serving process sends OpenTelemetry traces: only with an OTLP endpoint in the standard
environment, not disabled, and the ``otel`` extra installed (else one line says what to install)."""

from __future__ import annotations

import sys

import pytest

from ask_fable.surface.otel_setup import INSTALL_HINT, start_tracing, traces_wanted


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_SERVICE_NAME": "ask-fable"}, False),
    ],
)
def test_traces_are_wanted_only_with_an_endpoint_and_not_disabled(env: dict[str, str], wanted: bool) -> None:
    assert traces_wanted(env) is wanted


def test_without_an_endpoint_nothing_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert start_tracing() == (None, None)


def test_an_endpoint_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK missing (its import fails, as without ``ask-fable[otel]``): no provider, one line naming
    the extra; nothing raised."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    tracing, note = start_tracing()
    assert tracing is None
    assert note is not None and INSTALL_HINT in note
