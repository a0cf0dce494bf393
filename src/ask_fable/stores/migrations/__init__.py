"""The stores' Alembic migration history: one linear history of revisions, each upgrading every store
(its functions take the store as ``engine_name``); each store records where it stands in its own
``alembic_version`` table (in its SQLite file, or its PostgreSQL schema). Run by ``stores/schema.py``.
"""
