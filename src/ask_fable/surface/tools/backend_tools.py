"""The one-model tools the registered backends bring (``ask_glm``, ``ask_deepseek``, a plugin's own…).

Each is derived from its backend's :class:`~ask_fable.backends.descriptor.ModelTool`: the name, the
description (filled with the backend's facts when served) and whether it takes ``model`` and
``effort``. A backend registered from outside (a plugin) gets its tool the same way.
"""

from __future__ import annotations

from typing import Any, Literal, Union, cast

from pydantic import Field, create_model

from ask_fable.backends.descriptor import Backend
from ask_fable.backends.registry import registered
from ask_fable.surface.registry import ToolSpec
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
    if backend.tool is None:
        raise ValueError(f"backend {backend.name!r} has no one-model tool")
    return single_model_tool(backend.tool.name, backend.name, backend.tool.description, tool_args(backend))


TOOLS = [backend_tool(backend) for backend in registered() if backend.tool is not None]
