"""Every store implementation offers each method of its protocol, with the protocol's parameters."""

from __future__ import annotations

import inspect

import pytest

from ask_fable.stores import interfaces
from ask_fable.stores.answers import DatabaseArchive, MarkdownArchive
from ask_fable.stores.audit_index import AuditTable
from ask_fable.stores.audit_trail import AuditTrail
from ask_fable.stores.cache import AnswerCache
from ask_fable.stores.context import ContextStore
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.keys import KeyStore
from ask_fable.stores.quotas import QuotaLedger
from ask_fable.stores.saved_settings import SettingsStore
from ask_fable.stores.traces import TraceStore
from ask_fable.stores.transcripts import TranscriptStore
from ask_fable.stores.ui_sessions import MemoryWebSessions, WebSessionTable
from tests.fakes.memory_stores import MemoryContextBus

IMPLEMENTATIONS = [
    (interfaces.ContextBus, ContextStore),
    (interfaces.ContextBus, MemoryContextBus),
    (interfaces.AnswerCacheStore, AnswerCache),
    (interfaces.TraceRecordStore, TraceStore),
    (interfaces.HubStore, SessionHub),
    (interfaces.AuditStore, AuditTrail),
    (interfaces.AuditStore, AuditTable),
    (interfaces.AnswerArchive, MarkdownArchive),
    (interfaces.AnswerArchive, DatabaseArchive),
    (interfaces.ApiKeyStore, KeyStore),
    (interfaces.SessionTranscriptStore, TranscriptStore),
    (interfaces.QuotaStore, QuotaLedger),
    (interfaces.SavedSettingsStore, SettingsStore),
    (interfaces.WebSessionStore, WebSessionTable),
    (interfaces.WebSessionStore, MemoryWebSessions),
]


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(protocol).items()
            if inspect.isfunction(member) and not name.startswith("_")}


@pytest.mark.parametrize(("protocol", "implementation"), IMPLEMENTATIONS,
                         ids=[f"{p.__name__}-{i.__name__}" for p, i in IMPLEMENTATIONS])
def test_implementation_offers_every_method_of_its_protocol(protocol: type, implementation: type) -> None:
    methods = _methods(protocol)
    assert methods
    for name, wanted in methods.items():
        offered = inspect.signature(getattr(implementation, name))
        assert list(offered.parameters)[: len(wanted.parameters)] == list(wanted.parameters), name
        for parameter in wanted.parameters.values():
            found = offered.parameters[parameter.name]
            assert found.kind == parameter.kind and found.default == parameter.default, (name, parameter.name)


def test_every_store_the_app_can_be_given_has_a_protocol() -> None:
    given = {field.name for field in interfaces.GivenStores.__dataclass_fields__.values()}
    assert given == {"context", "cache", "traces", "hub", "audit", "answers", "keys", "transcripts", "quotas"}
    assert {p for p, _ in IMPLEMENTATIONS} == {
        interfaces.ContextBus, interfaces.AnswerCacheStore, interfaces.TraceRecordStore, interfaces.HubStore,
        interfaces.AuditStore, interfaces.AnswerArchive, interfaces.ApiKeyStore,
        interfaces.SessionTranscriptStore, interfaces.QuotaStore, interfaces.SavedSettingsStore,
        interfaces.WebSessionStore,
    }
