"""google-genai's MCP converter over every tool `skills serve` lists: each served
inputSchema must convert to a `types.Tool` without error. Usage: python
genai_schemas.py SKILLS_BINARY [ARGS...]; prints one JSON summary, exits 1 on failure."""
import asyncio
import json
import os
import sys

from google.genai import _mcp_utils
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    command, *args = sys.argv[1:]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    converted = _mcp_utils.mcp_to_gemini_tools(tools)
    names = [d.name for t in converted for d in (t.function_declarations or [])]
    print(json.dumps({"tools": [t.name for t in tools], "converted": names}))


asyncio.run(main())
