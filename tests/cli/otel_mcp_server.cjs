// otel_mcp_server.cjs PORT_FILE LOG: a Streamable HTTP MCP server for tests/cli/otel_context.sh
// (JSON answers, one tool "ping"); each request's method and traceparent header appended to LOG.
const http = require('http'), fs = require('fs');
const [portFile, log] = process.argv.slice(2);
const srv = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    if (req.method !== 'POST') { res.writeHead(405); res.end(); return; }
    const m = JSON.parse(body);
    fs.appendFileSync(log, JSON.stringify({method: m.method, traceparent: req.headers.traceparent || null}) + '\n');
    if (m.id === undefined) { res.writeHead(202); res.end(); return; }
    const results = {
      initialize: {protocolVersion: '2025-11-25', capabilities: {tools: {}}, serverInfo: {name: 'fake', version: '1'}},
      'tools/list': {tools: [{name: 'ping', description: 'pong', inputSchema: {type: 'object'}}]},
      'tools/call': {content: [{type: 'text', text: 'pong'}]},
    };
    const r = results[m.method];
    const out = r ? {jsonrpc: '2.0', id: m.id, result: r}
                  : {jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no such method'}};
    res.writeHead(200, {'Content-Type': 'application/json'});
    res.end(JSON.stringify(out));
  });
});
srv.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(srv.address().port)));
setTimeout(() => process.exit(0), 60000).unref();
