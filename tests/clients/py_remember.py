"""The save -> recall loop with the Python `mcp` SDK against `skills serve` over stdio:
session 1 saves a memory with memo_save (and again, which must change nothing), finds
it with memo_search and recall; session 2 (a new server process over the same data)
finds it again. Usage: python py_remember.py SKILLS_BINARY [ARGS...]; prints one JSON
summary, exits 1 on any failure."""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

WORD = "quetzalcoatlus"
MEMORY = {
    "title": f"Pin the {WORD} parser to 2.x",
    "body": f"We pin the {WORD} parser to 2.x: 3.0 changed its error spans. Revisit after the tokio upgrade.",
    "type": "decision",
    "tags": ["parser"],
    "files_modified": ["src/parser.rs"],
    "source": "py_remember",
}


def structured(result) -> dict:
    assert not result.is_error, result
    assert result.structured_content is not None, result
    return result.structured_content


async def session(params, work):
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            return await work(client)


async def main() -> None:
    command, *args = sys.argv[1:]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    summary: dict = {}

    async def first(client):
        saved = structured(await client.call_tool("memo_save", MEMORY))
        again = structured(await client.call_tool("memo_save", MEMORY))
        found = structured(await client.call_tool("memo_search", {"query": f"{WORD} parser"}))
        recalled = structured(await client.call_tool(
            "recall", {"question": f"what did we decide about the {WORD} parser?", "max_tokens": 300}))
        return saved, again, found, recalled

    saved, again, found, recalled = await session(params, first)
    summary["saved"] = {k: saved[k] for k in ("id", "created", "status")}
    summary["again"] = {k: again[k] for k in ("id", "created", "changed", "status")}
    summary["search_ids"] = [h["id"] for h in found["hits"]]
    summary["recall"] = {
        "tokens": recalled["tokens"],
        "max_tokens": recalled["max_tokens"],
        "citations": [i["citation"] for i in recalled["items"]],
        "pack": recalled["pack"],
    }

    async def second(client):
        return structured(await client.call_tool("memo_search", {"query": WORD}))

    after = await session(params, second)
    summary["after_restart_ids"] = [h["id"] for h in after["hits"]]
    print(json.dumps(summary))


asyncio.run(main())
