// TypeScript SDK v2 SkillsClient against `skills serve` over stdio: list every skill,
// get each by URI, read (and so verify size, digest and frontmatter of) every file of
// every skill, and read each skill folder as a directory.
// Usage: node ts_skills.mjs SKILLS_BINARY [ARGS…]; prints one JSON summary on stdout,
// exits 1 on any failure.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { isDeepStrictEqual } from 'node:util';

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'skills-ts-test', version: '1.0.0' });
await client.connect(transport);
const skills = new SkillsClient(client);
if (!skills.supported) throw new Error('server does not declare io.modelcontextprotocol/skills');
const listing = await skills.list();
const summary = { supported: skills.supported, directoryRead: skills.directoryRead,
  ttlMs: listing.ttlMs, cacheScope: listing.cacheScope, skills: [] };
for (const entry of listing.skills) {
  const { skill, ttlMs } = await skills.get(entry.uri);
  if (JSON.stringify(skill) !== JSON.stringify(entry)) throw new Error(`skills/get differs from skills/list for ${entry.uri}`);
  const files = [];
  for (const resource of skill.resources) {
    const file = await skills.read(skill, resource.uri);
    if (!file.verified) throw new Error(`${resource.uri} not verified`);
    files.push({ uri: resource.uri, size: file.bytes.length });
  }
  const main = await skills.read(skill);
  const root = skill.uri.replace(/\/SKILL\.md$/, '');
  const dir = skills.directoryRead ? await skills.readDirectory(root) : { resources: [] };
  summary.skills.push({ uri: skill.uri, name: skill.frontmatter.name, ttlMs, files,
    frontmatterVerified: isDeepStrictEqual(main.frontmatter, skill.frontmatter),
    directory: dir.resources.map((r) => r.name) });
}
// A tampered entry must fail verification: the client checks the digest itself.
const first = listing.skills[0];
const tampered = { ...first, resources: first.resources.map((r, i) => i === 0 ? { ...r, digest: 'sha256:' + '0'.repeat(64) } : r) };
try { await skills.read(tampered); summary.tamperedRejected = false; }
catch (e) { summary.tamperedRejected = e.name === 'SkillVerificationError' || /digest/.test(String(e)); }
try { await skills.get('skill://no-such-skill/SKILL.md'); summary.unknownRejected = false; }
catch (e) { summary.unknownRejected = true; summary.unknownError = String(e.code ?? e.message); }
console.log(JSON.stringify(summary));
await client.close();
