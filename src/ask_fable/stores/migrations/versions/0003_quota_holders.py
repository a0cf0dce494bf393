"""Which server process holds each call in flight (shown by ``ask-fable keys in-flight``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade(engine_name: str) -> None:
    """Bring ``engine_name`` (a store) to this revision."""
    if engine_name == "quotas":
        op.add_column("quota_in_flight", sa.Column("holder", sa.Text(), nullable=False,
                                                   server_default=sa.text("''")))


def downgrade(engine_name: str) -> None:
    """Take ``engine_name`` (a store) back to the previous revision."""
    if engine_name == "quotas":
        with op.batch_alter_table("quota_in_flight") as table:
            table.drop_column("holder")
