"""The deadline a mode shares with its backend calls: waits that cannot end before it are refused."""

from __future__ import annotations

import anyio

from ask_fable.backends.deadline import SharedDeadline, bounded_by, current_deadline


async def test_a_wait_that_fits_runs_its_course() -> None:
    """A sleep ending before the deadline is slept in full."""
    deadline = SharedDeadline(anyio.current_time() + 30, "the test's cut")
    with anyio.fail_after(5):
        assert await deadline.sleep(0.05) is True


async def test_a_wait_past_the_deadline_is_refused_at_once() -> None:
    """A sleep that would end past the deadline returns False without sleeping."""
    deadline = SharedDeadline(anyio.current_time() + 1, "the test's cut")
    with anyio.fail_after(0.5):
        assert await deadline.sleep(30) is False


async def test_a_wait_ends_when_the_deadline_moves_before_its_end() -> None:
    """Tightening the deadline wakes a sleep that would now pass it; a later deadline is ignored."""
    deadline = SharedDeadline(anyio.current_time() + 60, "the members' share")
    results: list[bool] = []

    async def sleeper() -> None:
        results.append(await deadline.sleep(30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(sleeper)
            await anyio.sleep(0.05)
            deadline.tighten(anyio.current_time() + 120, "later")
            assert deadline.reason == "the members' share"
            deadline.tighten(anyio.current_time() + 1, "the straggler cut")
    assert results == [False]
    assert deadline.reason == "the straggler cut" and deadline.remaining() <= 1


async def test_calls_see_the_deadline_of_their_block_only() -> None:
    """``bounded_by`` sets the deadline for its block and the tasks started in it, nothing else."""
    deadline = SharedDeadline(anyio.current_time() + 10, "the test's cut")
    seen: list[SharedDeadline | None] = []

    async def look() -> None:
        seen.append(current_deadline())

    with bounded_by(deadline):
        async with anyio.create_task_group() as group:
            group.start_soon(look)
    await look()
    assert seen == [deadline, None]
