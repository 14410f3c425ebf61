"""Python clients against `skills serve` over stdio: the `mcp` SDK (tools/list,
skills/list and skills/get as raw requests, resources/read with the digest checked
here) and fastmcp's skills client (list_skills, get_skill, read_skill, which verifies
size, digest and frontmatter). Usage: python py_skills.py SKILLS_BINARY [ARGS...];
prints one JSON summary, exits 1 on any failure."""
import asyncio
import base64
import hashlib
import json
import os
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension


async def main() -> None:
    command, *args = sys.argv[1:]
    summary: dict = {}
    transport = StdioTransport(command=command, args=args, env=dict(os.environ))
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        summary["protocol"] = str(client.protocol_version)
        tools = await client.list_tools()
        summary["tools"] = [t.name for t in tools]
        entries = await client.list_skills()
        summary["skills"] = []
        for entry in entries:
            got = await client.get_skill(entry.uri)
            assert got.uri == entry.uri, (got.uri, entry.uri)
            skill = await client.read_skill(entry.uri)  # verifies every file
            # The same check by hand over plain resources/read.
            for record in entry.resources:
                (content,) = await client.read_resource(record.uri)
                data = (content.text.encode() if hasattr(content, "text")
                        else base64.b64decode(content.blob))
                digest = "sha256:" + hashlib.sha256(data).hexdigest()
                assert digest == record.digest and len(data) == record.size, record.uri
            summary["skills"].append({"uri": entry.uri, "name": skill.name,
                                      "files": len(entry.resources)})
    print(json.dumps(summary))


asyncio.run(main())
