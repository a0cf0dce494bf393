"""Alembic's environment for the stores: runs the history on one store's connection, handed over by
``stores/schema.py`` in ``config.attributes`` (``connection``, ``store``, ``schema``), inside the
transaction that connection already has open."""

from __future__ import annotations

from alembic import context

from ask_fable.stores.tables import METADATA

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise SystemExit("ask-fable's stores are migrated with `ask-fable db upgrade`, which runs this history "
                     "on every store of the configured database")
store: str = config.attributes["store"]
context.configure(
    connection=connection,
    target_metadata=METADATA[store],
    version_table_schema=config.attributes.get("schema"),
    # SQLite changes most of a table's shape by copying it: let future revisions say so.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations(engine_name=store)
