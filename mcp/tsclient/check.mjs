// check.mjs: the official MCP TypeScript SDK as a third-party client of the
// kit's MCP binding. It lists the tools, calls each, and checks that the
// structured content validates against the tool's output schema (the SDK
// does this in callTool) and equals the REST answer for the same request.
//
//   node check.mjs --rest URL --token T --http URL/mcp
//   node check.mjs --rest URL --token T --stdio /path/to/aiusage mcp --url URL --token T
//   node check.mjs --rest URL/organisations/ID --token KEY --http URL/organisations/ID/mcp --merged
//
// --merged checks the organisation's one view: every listed record carries
// its sourceId, and single records are tool errors (an id is unique only
// within its source), as the REST view answers 404 for them.
//
// Exit status 0 when every check passes; 1 with the failures otherwise.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import assert from 'node:assert/strict';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const rest = opt('--rest');
const token = opt('--token');
const merged = args.includes('--merged');
if (!rest || !token) {
  console.error('usage: node check.mjs --rest URL --token T (--http URL | --stdio COMMAND ARGS...)');
  process.exit(2);
}

let transport;
let mode;
if (opt('--http')) {
  mode = 'streamable HTTP';
  transport = new StreamableHTTPClientTransport(new URL(opt('--http')), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else if (args.includes('--stdio')) {
  mode = 'stdio';
  const cmd = args.slice(args.indexOf('--stdio') + 1);
  transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: 'inherit' });
} else {
  console.error('one of --http or --stdio is required');
  process.exit(2);
}

// canonical sorts object keys, so JSON documents compare by content.
const canonical = (v) => {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
  }
  return v;
};

async function restGet(path) {
  const res = await fetch(rest.replace(/\/$/, '') + path, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, `REST ${path}: HTTP ${res.status}`);
  return res.json();
}

const failures = [];
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (err) {
    failures.push(name);
    console.log(`FAIL ${name}: ${err.message}`);
  }
}

const client = new Client({ name: 'aiusage-ci-tsclient', version: '1.0.0' });
await client.connect(transport);
console.log(`connected over ${mode} to ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);

const want = ['get_assistant', 'get_conversation', 'get_usage', 'list_assistants', 'list_conversations', 'list_events'];
let tools = [];
await check('tools/list', async () => {
  tools = (await client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name).sort(), want);
  for (const t of tools) {
    assert.ok(t.description && t.description.length > 20, `${t.name}: no description`);
    assert.ok(Object.keys(t.inputSchema?.properties ?? {}).length > 0, `${t.name}: empty input schema`);
    assert.ok(t.outputSchema && Object.keys(t.outputSchema).length > 1, `${t.name}: no output schema`);
    assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: readOnlyHint`);
    assert.equal(t.annotations?.destructiveHint, false, `${t.name}: destructiveHint`);
    assert.equal(t.annotations?.idempotentHint, true, `${t.name}: idempotentHint`);
    assert.equal(t.annotations?.openWorldHint, false, `${t.name}: openWorldHint`);
  }
});

// call runs a tool (the SDK validates structured content against the output
// schema) and compares it with the REST answer at path.
async function call(name, toolArgs, path) {
  const res = await client.callTool({ name, arguments: toolArgs });
  assert.ok(!res.isError, `${name}: isError: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name}: no structured content`);
  assert.ok(res.content?.some((c) => c.type === 'text'), `${name}: no text block`);
  if (path) {
    // Cursors are sealed with a fresh nonce each time: compare the pages,
    // and that both or neither carry one.
    const strip = (v) => {
      const { nextCursor, ...rest } = v;
      return { ...rest, nextCursor: typeof nextCursor === 'string' ? 'CURSOR' : nextCursor ?? null };
    };
    assert.deepEqual(canonical(strip(res.structuredContent)), canonical(strip(await restGet(path))), `${name}: differs from GET ${path}`);
  }
  return res.structuredContent;
}

let conv;
let asst;
await check('list_conversations', async () => {
  const page = await call('list_conversations', { limit: 5 }, '/conversations?limit=5');
  assert.equal(page.data.length, 5);
  conv = page.data[0];
  const next = await call('list_conversations', { limit: 5, cursor: page.nextCursor }, null);
  assert.notEqual(next.data[0].id, conv.id, 'the cursor moved on');
});
await check('list_conversations fields=summary', async () => {
  const page = await call('list_conversations', { limit: 3, fields: 'summary' }, null);
  for (const c of page.data) assert.equal(c.messages, undefined, 'summary has no messages');
});
// restStatus is the HTTP status of GET path on the REST view.
async function restStatus(path) {
  const res = await fetch(rest.replace(/\/$/, '') + path, { headers: { Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}
// singleIsError checks that a single record of the merged view is a tool
// error naming the reason, as REST answers 404.
async function singleIsError(tool, resource, id) {
  const res = await client.callTool({ name: tool, arguments: { id } });
  assert.equal(res.isError, true, `${tool}: not an error over the merged view`);
  assert.equal(await restStatus(`/${resource}/${encodeURIComponent(id)}`), 404, `REST /${resource}/{id}`);
}
if (merged) {
  await check('list_conversations records carry sourceId', async () => {
    const page = await call('list_conversations', { limit: 100 }, '/conversations?limit=100');
    assert.ok(page.data.every((c) => typeof c.sourceId === 'string' && c.sourceId.length > 0), 'a record without sourceId');
    assert.ok(new Set(page.data.map((c) => c.sourceId)).size > 1, 'the records of more than one source');
  });
}
await check('get_conversation', async () => {
  if (merged) return singleIsError('get_conversation', 'conversations', conv.id);
  await call('get_conversation', { id: conv.id }, `/conversations/${encodeURIComponent(conv.id)}`);
});
await check('list_assistants', async () => {
  const page = await call('list_assistants', { limit: 5 }, '/assistants?limit=5');
  asst = page.data[0];
});
await check('get_assistant', async () => {
  if (merged) return singleIsError('get_assistant', 'assistants', asst.id);
  await call('get_assistant', { id: asst.id }, `/assistants/${encodeURIComponent(asst.id)}`);
});
await check('list_events', async () => {
  await call('list_events', { limit: 5, category: 'Configuration' }, '/events?limit=5&category=Configuration');
});
await check('get_usage', async () => {
  const start = new Date(Date.now() - 6 * 86400e3).toISOString().slice(0, 10) + 'T00:00:00Z';
  const end = new Date(Date.now() + 86400e3).toISOString().slice(0, 10) + 'T00:00:00Z';
  const page = await call('get_usage', { granularity: 'day', groupBy: ['model'], startAt: start, endAt: end },
    `/usage?granularity=day&groupBy=model&startAt=${start}&endAt=${end}`);
  assert.ok(page.data.length > 0, 'usage buckets');
});
await check('an unknown id is a tool error', async () => {
  const res = await client.callTool({ name: 'get_conversation', arguments: { id: 'no-such-conversation' } });
  assert.equal(res.isError, true);
});
await check('a bad argument is a tool error', async () => {
  const res = await client.callTool({ name: 'list_conversations', arguments: { updatedSince: 'yesterday' } });
  assert.equal(res.isError, true);
});
await check('resources/templates/list', async () => {
  const t = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort();
  assert.deepEqual(t, ['aiusage://assistants/{id}', 'aiusage://conversations/{id}']);
});
await check('resources/read aiusage://conversations/{id}', async () => {
  if (merged) {
    await assert.rejects(client.readResource({ uri: `aiusage://conversations/${encodeURIComponent(conv.id)}` }),
      'a single record is an error over the merged view');
    return;
  }
  const res = await client.readResource({ uri: `aiusage://conversations/${encodeURIComponent(conv.id)}` });
  assert.deepEqual(canonical(JSON.parse(res.contents[0].text)), canonical(await restGet(`/conversations/${encodeURIComponent(conv.id)}`)));
});

await client.close();
if (failures.length > 0) {
  console.log(`${failures.length} check(s) failed over ${mode}: ${failures.join(', ')}`);
  process.exit(1);
}
console.log(`all checks passed over ${mode}`);
