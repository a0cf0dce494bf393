"""Caps on the size of one call, checked before any model runs: council members and chain stages.

A call over a cap is ``bad_args`` naming the setting that sets it, so one request can never fan out
into hundreds of provider calls. (Debate rounds are capped by the tool's arguments: 1 or 2.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ask_fable.errors import BadArgs

if TYPE_CHECKING:
    from ask_fable.config import Settings


def _cap(count: int, limit: int, what: str, setting: str) -> None:
    if count > limit:
        raise BadArgs(
            f"{count} {what} asked for; one call may have at most {limit} ({setting}). No model was called.",
            hint=f"name fewer, or have the operator raise {setting}",
        )


def check_council(members: list[str], settings: Settings) -> list[str]:
    """``members`` when a council may ask that many, else ``BadArgs`` naming the setting."""
    _cap(len(members), settings.max_council_members, "council members", "ASK_FABLE_MAX_COUNCIL_MEMBERS")
    return members


def check_chain(stages: list[str], settings: Settings) -> list[str]:
    """``stages`` when a chain may have that many, else ``BadArgs`` naming the setting."""
    _cap(len(stages), settings.max_chain_stages, "chain stages", "ASK_FABLE_MAX_CHAIN_STAGES")
    return stages
