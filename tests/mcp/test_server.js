#!/usr/bin/env node
// An MCP server over stdio for the tests, well-behaved or hostile on demand.
//   --log FILE        every message received is appended to FILE (one JSON per line)
//   --starts FILE     a line is appended to FILE each time the server starts
//   --silent          never answers anything (a server stuck before initialize)
//   --exit-at-start   writes a message on stderr and exits 3 at once
//   --garbage-at-start  writes a line that is not JSON before anything else
//   --page-size N     tools/list answers N tools per page (nextCursor)
//   --discover        speaks the 2026-07-28 revision: answers server/discover
//   --no-discover-answer  ignores server/discover (the client must time the probe out)
//   --start-delay MS  reads nothing for MS ms after it starts (a server slow to start)
//   --extra-tools N   also lists N tools gen0..gen<N-1> (they echo)
//   --nul-tool        also lists a tool whose name holds a NUL
//   --list-changed-loop  says its list changed after every tools/list it answers
//   --bounds          also lists big, deep and stop_reading (below)
// Tools: echo, add, slow {ms, steps} (progress), fail (isError), rpcerror (a JSON-RPC
// error), crash (exits mid-call), garbage (writes non-JSON mid-call), flood (an endless
// line), noise {n} (n notifications, then the answer), ping_me (asks the client for a
// ping), add_tool (adds the tool "extra" and says the list changed; extra with
// {"drop": true} removes itself and says so again), image, structured, big {n} (a text of n
// bytes), deep (a line nested 3000 deep), stop_reading (stops reading its input and sends
// requests whose answers pile up).
'use strict';
const fs = require('fs');

const args = process.argv.slice(2);
const opt = (name) => args.includes(name);
const val = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const logFile = val('--log', null);
const startsFile = val('--starts', null);
const pageSize = parseInt(val('--page-size', '0'), 10);
if (startsFile) fs.appendFileSync(startsFile, `${process.pid}\n`);
if (opt('--exit-at-start')) {
  process.stderr.write('test server: refusing to start (on purpose)\n');
  process.exit(3);
}

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
if (opt('--garbage-at-start')) process.stdout.write('Hello! I am not JSON-RPC.\n');

const obj = { type: 'object' };
const tools = [
  { name: 'echo', description: 'Echoes text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, annotations: { idempotentHint: true } },
  { name: 'add', description: 'Adds a and b', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
  { name: 'slow', description: 'Waits', inputSchema: { type: 'object', properties: { ms: { type: 'integer' }, steps: { type: 'integer' } } } },
  { name: 'fail', description: 'Fails', inputSchema: obj },
  { name: 'rpcerror', description: 'Answers a JSON-RPC error', inputSchema: obj },
  { name: 'crash', description: 'Exits mid-call', inputSchema: obj },
  { name: 'garbage', description: 'Writes garbage', inputSchema: obj },
  { name: 'flood', description: 'Writes an endless line', inputSchema: obj },
  { name: 'noise', description: 'Many notifications', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
  { name: 'ping_me', description: 'Pings the client', inputSchema: obj },
  { name: 'add_tool', description: 'Adds a tool', inputSchema: obj },
  { name: 'image', description: 'Returns an image', inputSchema: obj },
  { name: 'structured', description: 'Structured content', inputSchema: obj },
  { name: 'leak', description: 'Returns its T_SECRET', inputSchema: obj },
  // a keyword the validator of agentc does not know: the tool must still be offered
  { name: 'odd_schema', description: 'Unknown keyword', inputSchema: { type: 'object', properties: { s: { type: 'string', contentMediaType: 'text/plain', unknownKeyword: 1 } } } },
];

if (opt('--bounds')) {
  tools.push({ name: 'big', description: 'A big text', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } });
  tools.push({ name: 'deep', description: 'Nested too deeply', inputSchema: obj });
  tools.push({ name: 'stop_reading', description: 'Stops reading', inputSchema: obj });
}
for (let i = 0; i < parseInt(val('--extra-tools', '0'), 10); i++) tools.push({ name: `gen${i}`, description: 'generated', inputSchema: obj });
if (opt('--nul-tool')) tools.push({ name: 'bad\u0000name', description: 'a NUL in its name', inputSchema: obj });

const running = new Map(); // request id -> timer
let pingWaiter = null;

const result = (id, r) => send({ jsonrpc: '2.0', id, result: r });
const text = (t, isError) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

function call(id, p) {
  const a = p.arguments || {};
  const token = p._meta && p._meta.progressToken;
  switch (p.name) {
    case 'echo': return result(id, text(String(a.text)));
    case 'add': return result(id, text(String(a.a + a.b)));
    case 'slow': {
      const steps = a.steps || 1, ms = a.ms || 1000;
      let k = 0;
      const tick = () => {
        k++;
        if (token !== undefined) send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: k, total: steps, message: `step ${k}` } });
        if (k >= steps) { running.delete(id); return result(id, text(`slept ${ms} ms`)); }
        running.set(id, setTimeout(tick, ms / steps));
      };
      running.set(id, setTimeout(tick, ms / steps));
      return;
    }
    case 'fail': return result(id, text('the tool failed on purpose', true));
    case 'rpcerror': return send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'bad params on purpose' } });
    case 'crash':
      process.stderr.write('test server: crashing on purpose\n');
      return process.exit(7);
    case 'garbage': return process.stdout.write('<<this is not json>>\n');
    case 'flood': {
      const chunk = 'x'.repeat(1 << 20);
      let n = 0;
      const more = () => { while (n < 40) { n++; if (!process.stdout.write(chunk)) return process.stdout.once('drain', more); } };
      return more();
    }
    case 'noise': {
      for (let i = 0; i < (a.n || 1000); i++) send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `note ${i}` } });
      return result(id, text(`sent ${a.n || 1000} notifications`));
    }
    case 'ping_me':
      pingWaiter = (ans) => result(id, text(ans.result ? 'the client answered ping' : 'the client did not answer ping'));
      return send({ jsonrpc: '2.0', id: 'srv-ping-1', method: 'ping' });
    case 'add_tool':
      // as the SDKs do (registerTool during a call): the notification, then the result
      if (!tools.find((t) => t.name === 'extra')) tools.push({ name: 'extra', description: 'Added later', inputSchema: obj });
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return result(id, text('added'));
    case 'extra': {
      if (!a.drop) return result(id, text('extra works'));
      const i = tools.findIndex((t) => t.name === 'extra'); // {"drop": true}: goes away again
      if (i >= 0) tools.splice(i, 1);
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return result(id, text('extra dropped'));
    }
    case 'leak': return result(id, text(`my token is ${process.env.T_SECRET}`));
    case 'image': return result(id, { content: [{ type: 'image', data: Buffer.alloc(300).toString('base64'), mimeType: 'image/png' }, { type: 'resource_link', uri: 'file:///x.txt', name: 'x' }] });
    case 'structured': return result(id, { content: [{ type: 'text', text: 'see structured' }], structuredContent: { n: 42 } });
    case 'odd_schema': return result(id, text(`got ${JSON.stringify(a)}`));
    case 'big': return result(id, text('b'.repeat(a.n || 1000)));
    case 'deep': return process.stdout.write('['.repeat(3000) + ']'.repeat(3000) + '\n');
    case 'stop_reading': {
      process.stdin.pause(); // what agentc answers now piles up on its side
      const pad = 'p'.repeat(100000);
      let k = 0;
      const more = () => { for (;;) { k++; if (!process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: `${pad}${k}`, method: 'sampling/createMessage', params: {} }) + '\n')) return process.stdout.once('drain', more); } };
      return more();
    }
    default:
      if (/^gen\d+$/.test(p.name)) return result(id, text(p.name));
      return send({ jsonrpc: '2.0', id, error: { code: -32602, message: `unknown tool ${p.name}` } });
  }
}

function handle(m) {
  if (logFile) fs.appendFileSync(logFile, JSON.stringify(m) + '\n');
  if (opt('--silent')) return;
  if (m.id === 'srv-ping-1' && !m.method) { if (pingWaiter) pingWaiter(m); pingWaiter = null; return; }
  switch (m.method) {
    case 'server/discover':
      if (opt('--no-discover-answer')) return;
      if (!opt('--discover')) return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
      return result(m.id, { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'test', version: '1' } });
    case 'initialize':
      return result(m.id, { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'test', version: '1' } });
    case 'tools/list': {
      if (opt('--list-changed-loop')) setImmediate(() => send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
      if (!pageSize) return result(m.id, { tools });
      const from = parseInt((m.params && m.params.cursor) || '0', 10);
      const page = tools.slice(from, from + pageSize);
      const r = { tools: page };
      if (from + pageSize < tools.length) r.nextCursor = String(from + pageSize);
      return result(m.id, r);
    }
    case 'tools/call': return call(m.id, m.params || {});
    case 'notifications/cancelled': {
      const t = running.get(m.params && m.params.requestId);
      if (t) { clearTimeout(t); running.delete(m.params.requestId); }
      return;
    }
    case 'ping': return result(m.id, {});
    default:
      if (m.id !== undefined && m.method) send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
}

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.pause();
setTimeout(() => process.stdin.resume(), parseInt(val('--start-delay', '0'), 10));
process.stdin.on('data', (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
process.stdin.on('end', () => process.exit(0));
