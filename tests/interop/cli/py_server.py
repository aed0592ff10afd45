"""A Python SDK (PyPI `mcp`) server for tests/interop/cli.sh: tools whose schemas pydantic writes
(a nested model argument, optional arguments, Literal and Enum arguments, a list argument, and
structured output from a pydantic model, a TypedDict and a plain int), a tool without an output
schema, one that fails, a prompt with arguments, a resource and a resource template.

`python py_server.py` serves stdio; `python py_server.py http PORT` Streamable HTTP on 127.0.0.1.
With MCP_CLI_INTEROP_VARIANT=1 the tool `add` takes a third argument `c` (for `codegen --check`).
"""
import enum
import os
import sys
from typing import Literal, Optional, TypedDict

from pydantic import BaseModel, Field

from mcp.server import MCPServer

VARIANT = os.environ.get("MCP_CLI_INTEROP_VARIANT") == "1"

mcp = MCPServer("interop-cli-python", version="1.0.0")


class Point(BaseModel):
    lat: float
    lon: float


class Stop(BaseModel):
    name: str
    at: Point
    nights: int = 1


class Trip(BaseModel):
    title: str
    stops: list[Stop]
    budget: Optional[float] = None


class Itinerary(BaseModel):
    title: str
    mode: Literal["car", "train", "plane"]
    travelers: int
    total_nights: int
    stop_names: list[str]
    tags: list[str]
    budget_per_traveler: Optional[float] = None
    notes: Optional[str] = None


@mcp.tool()
def plan_trip(
    trip: Trip,
    mode: Literal["car", "train", "plane"] = "train",
    travelers: int = 1,
    tags: list[str] = [],
    notes: Optional[str] = None,
) -> Itinerary:
    """Plan a trip: a nested model argument, optional arguments, an enum and a list."""
    return Itinerary(
        title=trip.title,
        mode=mode,
        travelers=travelers,
        total_nights=sum(s.nights for s in trip.stops),
        stop_names=[s.name for s in trip.stops],
        tags=sorted(tags),
        budget_per_traveler=None if trip.budget is None else trip.budget / travelers,
        notes=notes,
    )


class Shade(str, enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Paint(TypedDict):
    color: str
    shade: str
    hex: str
    glossy: bool


@mcp.tool()
def mix_paint(color: str, shade: Shade, glossy: bool = False) -> Paint:
    """Mix a paint (an Enum argument, a boolean; a TypedDict result)."""
    base = {"red": (200, 30, 30), "green": (30, 160, 60), "blue": (40, 60, 200)}.get(color, (128, 128, 128))
    factor = 0.6 if shade == Shade.DARK else 1.2
    rgb = [max(0, min(255, int(c * factor))) for c in base]
    return {"color": color, "shade": shade.value, "hex": "#%02x%02x%02x" % tuple(rgb), "glossy": glossy}


if VARIANT:

    @mcp.tool()
    def add(a: int, b: int, c: int = 0) -> int:
        """Add integers."""
        return a + b + c

else:

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add integers."""
        return a + b


class Stats(BaseModel):
    count: int
    mean: float
    minimum: float
    maximum: float


@mcp.tool()
def stats(values: list[float] = Field(min_length=1), label: str | None = None) -> Stats:
    """Statistics of a list of numbers."""
    return Stats(count=len(values), mean=sum(values) / len(values), minimum=min(values), maximum=max(values))


@mcp.tool(structured_output=False)
def shout(text: str, times: int = 1) -> str:
    """Upper-cases a text (no output schema)."""
    return " ".join([text.upper()] * times)


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails (the result has isError)."""
    raise ValueError(f"failed on purpose: {reason}")


@mcp.resource("greeting://hello", mime_type="text/plain")
def hello() -> str:
    """A greeting."""
    return "Hello from Python"


@mcp.resource("users://{user_id}/profile", mime_type="application/json")
def profile(user_id: str) -> str:
    """A user's profile."""
    return '{"user": "%s"}' % user_id


@mcp.prompt()
def review(code: str, language: str = "python") -> str:
    """Review some code."""
    return f"Please review this {language}:\n{code}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run()
