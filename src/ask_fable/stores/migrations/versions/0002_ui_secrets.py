"""The web view's signing secret: login forms carry a signed token instead of a stored session.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade(engine_name: str) -> None:
    """Bring ``engine_name`` (a store) to this revision."""
    if engine_name == "ui_sessions":
        op.create_table(
            "ui_secrets",
            sa.Column("name", sa.Text(), nullable=False),
            sa.Column("value", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("name"),
        )


def downgrade(engine_name: str) -> None:
    """Take ``engine_name`` (a store) back to the previous revision."""
    if engine_name == "ui_sessions":
        op.drop_table("ui_secrets")
