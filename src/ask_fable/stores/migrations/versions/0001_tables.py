"""Every store's tables; a database made before this history is adopted as it is.

A store with no tables gets them. A SQLite file or PostgreSQL schema made by a release before this
history (its version in ``PRAGMA user_version``, or in ``ask_fable.schema_migrations``) is adopted in
place, without touching a row, when it is at that release's last version; an older SQLite file is
brought there first with the frozen scripts of ``legacy.py``. Either way the old version marker is
set past any release that knew only those scripts, so such a release refuses the database instead
of running its scripts again.

Revision ID: 0001
Revises:
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ask_fable.errors import SchemaMismatch
from ask_fable.stores.migrations.legacy import (
    FINAL,
    LEGACY_SENTINEL,
    UPGRADES,
    set_legacy_version,
    split_statements,
)

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

#: An integer column: INTEGER on SQLite (an integer primary key is the row id), BIGINT on PostgreSQL.
INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade(engine_name: str) -> None:
    """Create ``engine_name``'s tables, or adopt the ones a release before this history made."""
    found = _legacy_version(engine_name)
    final = FINAL[engine_name]
    if found == 0:
        CREATE[engine_name]()
    elif found > final:
        raise SchemaMismatch.newer(f"{engine_name} (pre-Alembic)", found, final)
    elif found < final:
        if op.get_bind().dialect.name != "sqlite":
            raise SchemaMismatch(
                f"the PostgreSQL {engine_name} schema is at version {found} of a release older than the "
                f"last one before this history ({final}); upgrade it with that release's `ask-fable db "
                "upgrade` first",
                hint="install the previous release, run `ask-fable db upgrade`, then this one")
        for script in UPGRADES[engine_name][found - 1:]:
            for statement in split_statements(script):
                op.execute(statement)
    set_legacy_version(op.get_bind(), engine_name, LEGACY_SENTINEL)


def downgrade(engine_name: str) -> None:
    """Drop ``engine_name``'s tables (every row with them)."""
    for table in DROP[engine_name]:
        op.drop_table(table)
    set_legacy_version(op.get_bind(), engine_name, 0)


def _legacy_version(store: str) -> int:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        return int(bind.exec_driver_sql("PRAGMA user_version").scalar() or 0)
    if bind.exec_driver_sql("SELECT to_regclass('ask_fable.schema_migrations')").scalar() is None:
        return 0
    found = bind.execute(sa.text("SELECT version FROM ask_fable.schema_migrations WHERE store = :store"),
                         {"store": store}).scalar()
    return int(found or 0)


def _create_context() -> None:
    op.create_table('context',
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('key', sa.Text(), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('description', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('size_chars', INT, nullable=False),
    sa.Column('created_at', sa.Double(), nullable=False),
    sa.Column('updated_at', sa.Double(), nullable=False),
    sa.Column('size_bytes', INT, server_default=sa.text('0'), nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'key')
    )
    op.create_index('context_tenant_updated', 'context', ['tenant', 'updated_at'])
    op.create_table('context_tenants',
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('writes', INT, server_default=sa.text('0'), nullable=False),
    sa.PrimaryKeyConstraint('tenant')
    )


def _create_cache() -> None:
    op.create_table('cache',
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('key', sa.Text(), nullable=False),
    sa.Column('tool', sa.Text(), nullable=False),
    sa.Column('payload', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'key')
    )
    op.create_index('cache_created', 'cache', ['created_at'])
    op.create_table('meta',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', INT, nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def _create_hub() -> None:
    op.create_table('meta',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', INT, nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('sessions',
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('session_key', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('project', sa.Text(), nullable=False),
    sa.Column('first_seen', sa.Double(), nullable=False),
    sa.Column('last_seen', sa.Double(), nullable=False),
    sa.Column('turns', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('last_question', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('last_oracle', sa.Text(), nullable=True),
    sa.Column('last_status', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('tenant', 'session_key', 'agent_id')
    )
    op.create_index('sessions_last_seen', 'sessions', ['last_seen'])
    op.create_index('sessions_tenant_project', 'sessions', ['tenant', 'project', 'last_seen'])
    op.create_table('turns',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('session_key', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('project', sa.Text(), nullable=False),
    sa.Column('oracle', sa.Text(), nullable=False),
    sa.Column('status', sa.Text(), nullable=False),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('elapsed_ms', sa.Double(), nullable=True),
    sa.Column('sdk_session_id', sa.Text(), nullable=True),
    sa.Column('ts', sa.Double(), nullable=False),
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sqlite_autoincrement=True
    )
    op.create_index('turns_project_ts', 'turns', ['project', 'ts'])
    op.create_index('turns_session', 'turns', ['session_key', 'agent_id', 'id'])
    op.create_index('turns_tenant_session', 'turns', ['tenant', 'session_key', 'agent_id', 'id'])
    op.create_index('turns_tenant_ts', 'turns', ['tenant', 'ts'])
    op.create_index('turns_ts', 'turns', ['ts'])


def _create_traces() -> None:
    op.create_table('bundles',
    sa.Column('trace_id', sa.Text(), nullable=False),
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('content', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id')
    )
    op.create_table('meta',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', INT, nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('traces',
    sa.Column('trace_id', sa.Text(), nullable=False),
    sa.Column('ts', sa.Double(), nullable=False),
    sa.Column('tool', sa.Text(), nullable=True),
    sa.Column('mode', sa.Text(), nullable=True),
    sa.Column('status', sa.Text(), nullable=True),
    sa.Column('kind', sa.Text(), nullable=True),
    sa.Column('session', sa.Text(), nullable=True),
    sa.Column('project', sa.Text(), nullable=True),
    sa.Column('agent_id', sa.Text(), nullable=True),
    sa.Column('elapsed_ms', sa.Double(), nullable=True),
    sa.Column('providers', sa.Text(), server_default=sa.text("'[]'"), nullable=False),
    sa.Column('models', sa.Text(), server_default=sa.text("'[]'"), nullable=False),
    sa.Column('cached', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.PrimaryKeyConstraint('trace_id')
    )
    op.create_index('traces_project_ts', 'traces', ['project', 'ts', 'trace_id'])
    op.create_index('traces_session_ts', 'traces', ['session', 'ts', 'trace_id'])
    op.create_index('traces_status_ts', 'traces', ['status', 'ts', 'trace_id'])
    op.create_index('traces_tenant_project_ts', 'traces', ['tenant', 'project', 'ts', 'trace_id'])
    op.create_index('traces_tenant_session_ts', 'traces', ['tenant', 'session', 'ts', 'trace_id'])
    op.create_index('traces_tenant_status_ts', 'traces', ['tenant', 'status', 'ts', 'trace_id'])
    op.create_index('traces_tenant_tool_ts', 'traces', ['tenant', 'tool', 'ts', 'trace_id'])
    op.create_index('traces_tenant_ts', 'traces', ['tenant', 'ts', 'trace_id'])
    op.create_index('traces_tool_ts', 'traces', ['tool', 'ts', 'trace_id'])
    op.create_index('traces_ts', 'traces', ['ts', 'trace_id'])
    op.create_table('trace_events',
    sa.Column('trace_id', sa.Text(), nullable=False),
    sa.Column('seq', INT, nullable=False),
    sa.Column('t_ms', sa.Double(), nullable=True),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('attrs', sa.Text(), server_default=sa.text("'{}'"), nullable=False),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.trace_id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trace_id', 'seq'),
    sqlite_with_rowid=False
    )
    op.create_table('trace_providers',
    sa.Column('provider', sa.Text(), nullable=False),
    sa.Column('ts', sa.Double(), nullable=False),
    sa.Column('trace_id', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.trace_id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('provider', 'ts', 'trace_id'),
    sqlite_with_rowid=False
    )
    op.create_index('trace_providers_trace', 'trace_providers', ['trace_id'])


def _create_audit() -> None:
    op.create_table('files',
    sa.Column('ident', sa.Text(), nullable=False),
    sa.Column('offset', INT, nullable=False),
    sa.PrimaryKeyConstraint('ident')
    )
    op.create_table('recs',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('ident', sa.Text(), nullable=False),
    sa.Column('ts', sa.Double(), nullable=True),
    sa.Column('status', sa.Text(), nullable=True),
    sa.Column('kind', sa.Text(), nullable=True),
    sa.Column('model', sa.Text(), nullable=True),
    sa.Column('provider', sa.Text(), nullable=True),
    sa.Column('session', sa.Text(), nullable=True),
    sa.Column('project', sa.Text(), nullable=True),
    sa.Column('tool', sa.Text(), nullable=True),
    sa.Column('mode', sa.Text(), nullable=True),
    sa.Column('cached', INT, nullable=False),
    sa.Column('elapsed_ms', sa.Double(), nullable=True),
    sa.Column('degraded', INT, nullable=False),
    sa.Column('synth_fallback', INT, nullable=False),
    sa.Column('allowed', INT, nullable=True),
    sa.Column('outcome', sa.Text(), server_default=sa.text("'errors'"), nullable=False),
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('cost_usd', sa.Double(), nullable=True),
    sa.Column('line', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('recs_ident', 'recs', ['ident'])
    op.create_index('recs_tenant_ts', 'recs', ['tenant', 'ts'])
    op.create_index('recs_ts', 'recs', ['ts'])
    op.create_table('members',
    sa.Column('rec_id', INT, nullable=False),
    sa.Column('provider', sa.Text(), nullable=True),
    sa.Column('model', sa.Text(), nullable=True),
    sa.Column('status', sa.Text(), nullable=True),
    sa.Column('kind', sa.Text(), nullable=True),
    sa.Column('elapsed_ms', sa.Double(), nullable=True),
    sa.Column('outcome', sa.Text(), server_default=sa.text("'errors'"), nullable=False),
    sa.Column('cost_usd', sa.Double(), nullable=True),
    sa.ForeignKeyConstraint(['rec_id'], ['recs.id'], ondelete='CASCADE')
    )
    op.create_index('members_rec', 'members', ['rec_id'])


def _create_keys() -> None:
    op.create_table('api_keys',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('scope', sa.Text(), nullable=False),
    sa.CheckConstraint("scope IN ('read', 'ask', 'admin')"),
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('prefix', sa.Text(), nullable=False),
    sa.Column('key_hash', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('last_used_at', sa.Text(), nullable=True),
    sa.Column('revoked_at', sa.Text(), nullable=True),
    sa.Column('rpm', INT, nullable=True),
    sa.Column('concurrent', INT, nullable=True),
    sa.Column('daily_usd', sa.Double(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key_hash'),
    sqlite_autoincrement=True
    )


def _create_answers() -> None:
    op.create_table('documents',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('kind', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sqlite_autoincrement=True
    )
    op.create_index('documents_tenant_kind', 'documents', ['tenant', 'kind', 'id'])


def _create_transcripts() -> None:
    op.create_table('meta',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', INT, nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('session_leases',
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('namespace', sa.Text(), nullable=False),
    sa.Column('session', sa.Text(), nullable=False),
    sa.Column('holder', sa.Text(), nullable=False),
    sa.Column('expires', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'namespace', 'session')
    )
    op.create_index('session_leases_expires', 'session_leases', ['expires'])
    op.create_table('turns',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('tenant', sa.Text(), server_default=sa.text("'local'"), nullable=False),
    sa.Column('namespace', sa.Text(), nullable=False),
    sa.Column('session', sa.Text(), nullable=False),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('prompt', sa.Text(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('thinking', sa.Text(), nullable=True),
    sa.Column('model', sa.Text(), nullable=True),
    sa.Column('cost_usd', sa.Double(), nullable=True),
    sa.Column('ts', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sqlite_autoincrement=True
    )
    op.create_index('turns_session', 'turns', ['tenant', 'namespace', 'session', 'id'])
    op.create_index('turns_ts', 'turns', ['ts'])


def _create_quotas() -> None:
    op.create_table('quota_days',
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('key_id', INT, nullable=False),
    sa.Column('day', sa.Text(), nullable=False),
    sa.Column('calls', INT, nullable=False),
    sa.Column('spent_microusd', INT, nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'key_id', 'day')
    )
    op.create_table('quota_in_flight',
    sa.Column('ticket', sa.Text(), nullable=False),
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('key_id', INT, nullable=False),
    sa.Column('started_at', sa.Double(), nullable=False),
    sa.Column('expires_at', sa.Double(), nullable=False),
    sa.Column('reserved_microusd', INT, nullable=False),
    sa.PrimaryKeyConstraint('ticket')
    )
    op.create_index('quota_in_flight_key', 'quota_in_flight', ['tenant', 'key_id'])
    op.create_table('quota_keys',
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('key_id', INT, nullable=False),
    sa.Column('admissions', INT, nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'key_id')
    )
    op.create_table('quota_minutes',
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('key_id', INT, nullable=False),
    sa.Column('minute', INT, nullable=False),
    sa.Column('calls', INT, nullable=False),
    sa.PrimaryKeyConstraint('tenant', 'key_id', 'minute')
    )


def _create_settings() -> None:
    op.create_table('saved_settings',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('tenant', sa.Text(), nullable=False),
    sa.Column('saved_at', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('saved_settings_revision',
    sa.Column('one', INT, autoincrement=False, nullable=False),
    sa.Column('revision', INT, nullable=False),
    sa.CheckConstraint('one = 1'),
    sa.PrimaryKeyConstraint('one')
    )
    op.execute("INSERT INTO saved_settings_revision (one, revision) VALUES (1, 0)")


def _create_ui_sessions() -> None:
    op.create_table('ui_sessions',
    sa.Column('digest', sa.Text(), nullable=False),
    sa.Column('tenant', sa.Text(), nullable=True),
    sa.Column('name', sa.Text(), nullable=True),
    sa.Column('key_id', INT, nullable=True),
    sa.Column('sees_server_paths', INT, nullable=False),
    sa.Column('csrf', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Double(), nullable=False),
    sa.Column('expires_at', sa.Double(), nullable=False),
    sa.PrimaryKeyConstraint('digest')
    )
    op.create_index('ui_sessions_age', 'ui_sessions', ['created_at'])
    op.create_index('ui_sessions_expiry', 'ui_sessions', ['expires_at'])


CREATE = {
    "context": _create_context,
    "cache": _create_cache,
    "hub": _create_hub,
    "traces": _create_traces,
    "audit": _create_audit,
    "keys": _create_keys,
    "answers": _create_answers,
    "transcripts": _create_transcripts,
    "quotas": _create_quotas,
    "settings": _create_settings,
    "ui_sessions": _create_ui_sessions,
}
DROP: dict[str, tuple[str, ...]] = {
    "context": ('context_tenants', 'context'),
    "cache": ('meta', 'cache'),
    "hub": ('turns', 'sessions', 'meta'),
    "traces": ('trace_providers', 'trace_events', 'traces', 'meta', 'bundles'),
    "audit": ('members', 'recs', 'files'),
    "keys": ('api_keys',),
    "answers": ('documents',),
    "transcripts": ('turns', 'session_leases', 'meta'),
    "quotas": ('quota_minutes', 'quota_keys', 'quota_in_flight', 'quota_days'),
    "settings": ('saved_settings_revision', 'saved_settings'),
    "ui_sessions": ('ui_sessions',),
}
