"""The one-model tools the registered backends bring (``ask_glm``, ``ask_deepseek``, a plugin's own…).

Each is derived from its backend's :class:`~ask_fable.backends.descriptor.ModelTool`: the name, the
description (filled with the backend's facts when served) and whether it takes ``model`` and
``effort``, or is a conversation turn (``ask_opus5``: ``session`` and ``reset``, as ``ask`` with the
backend's token). A backend registered from outside (a plugin) gets its tool the same way.
"""

from __future__ import annotations

from typing import Any, Literal, Union, cast

from pydantic import Field, create_model

from ask_fable.access import ASKS
from ask_fable.backends.descriptor import Backend
from ask_fable.backends.registry import registered
from ask_fable.contract import AnswerResult
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.claude_tools import SessionAskArgs, ask_session
from ask_fable.surface.tools.common import (
    AskArgs,
    AskWithEffortArgs,
    AskWithModelArgs,
    single_model_tool,
)

#: How :class:`AskWithModelArgs` describes its ``model``: a tool that says the same uses that class.
_STANDARD_MODEL_ARG = AskWithModelArgs.model_fields["model"].description


def tool_args(backend: Backend) -> type[AskArgs]:
    """The arguments of ``backend``'s one-model tool."""
    tool = backend.tool
    if tool is None:
        raise ValueError(f"backend {backend.name!r} has no one-model tool")
    name = "".join(part.capitalize() for part in backend.name.split("_")) + "Args"
    if tool.session:
        if tool.model_arg is not None or tool.effort or tool.effort_choices:
            raise ValueError(f"{tool.name} is a conversation turn: it takes no model or effort")
        return SessionAskArgs
    if tool.effort_choices:
        # The backend's own effort words, or none: a type built at run time, which pydantic reads.
        effort = cast(Any, Union.__getitem__((Literal.__getitem__(tool.effort_choices), type(None))))
        return create_model(name, __base__=AskArgs, __doc__=f"Arguments of {tool.name}.",
                            effort=(effort, Field(None, description=tool.effort_arg)))
    base: type[AskArgs] = AskWithEffortArgs if tool.effort else AskArgs
    if tool.model_arg is None:
        return base
    if tool.effort and tool.model_arg == _STANDARD_MODEL_ARG:
        return AskWithModelArgs
    model: type[AskArgs] = create_model(
        name, __base__=base, __doc__=f"Arguments of {tool.name}.",
        model=(str | None, Field(None, description=tool.model_arg)),
    )
    return model


def backend_tool(backend: Backend) -> ToolSpec:
    """``backend``'s one-model tool."""
    tool = backend.tool
    if tool is None:
        raise ValueError(f"backend {backend.name!r} has no one-model tool")
    if not tool.session:
        return single_model_tool(tool.name, backend.name, tool.description, tool_args(backend))
    args, name, token = tool_args(backend), tool.name, backend.name

    async def handler(arguments: SessionAskArgs, ctx: ToolContext) -> AnswerResult:
        return await ask_session(ctx, name, token, arguments)

    handler.__doc__ = f"One turn of a conversation with the {backend.name} backend."
    return ToolSpec(name=name, family="single", description=tool.description, args=args, result=AnswerResult,
                    handler=handler, effects=ASKS, backend=backend.name)


TOOLS = [backend_tool(backend) for backend in registered() if backend.tool is not None]
