"""The stores' Alembic migration history: one linear history of revisions, each upgrading every store
(its functions take the store as ``engine_name``); each store records where it stands in its own
``alembic_version`` table (in its SQLite file, or its PostgreSQL schema). Run by ``stores/schema.py``.
"""

#: The last revision of the history: what this release serves on. Kept here so that checking a
#: store that is already current needs no Alembic import; a test holds it equal to Alembic's head.
HEAD = "0003"
