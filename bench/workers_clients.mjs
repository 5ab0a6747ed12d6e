// bench/workers_clients.mjs - SSE delivery across workers: N sessions created on the holder,
// each streamed twice at once, on the holder and on another worker, while the holder runs T
// turns of each (messages sent to the holder; the scripted model streams the answers). Reports,
// as one JSON line, the delay from each frame's event being applied (its t_us) to the client
// receiving it, p50/p99 in ms, on the holder and on the other worker, and the turns' time.
// Usage: node bench/workers_clients.mjs HOLDER_URL OTHER_URL N T
import http from 'node:http';

const [holder, other, nStr, tStr] = process.argv.slice(2);
const N = Number(nStr);
const T = Number(tStr);
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
function nowUs() { return (performance.timeOrigin + performance.now()) * 1000; }
function request(base, method, path, body) {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, method, path, agent,
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      let d = '';
      res.on('data', (c) => (d += c));
      res.on('end', () => (res.statusCode < 300 ? resolve(JSON.parse(d)) : reject(new Error(res.statusCode + ' ' + d))));
    });
    r.on('error', reject);
    r.end(body ? JSON.stringify(body) : undefined);
  });
}
// a stream of session id on base: its delays pushed to out, resolve() at its T-th turn_done
function stream(base, id, out, startUs) {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    let turns = 0;
    const r = http.get({ host: url.hostname, port: url.port, path: `/v1/sessions/${id}/events`, agent: false }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        const t = nowUs();
        buf += c;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = /^data: (.*)$/m.exec(block);
          if (!data) continue;
          const d = JSON.parse(data[1]);
          if (d.t_us >= startUs.v) out.push((t - d.t_us) / 1000);
          if (/^event: turn_done$/m.test(block) && ++turns === T) {
            res.destroy();
            resolve();
          }
        }
      });
    });
    r.on('error', reject);
  });
}
const ids = [];
for (let i = 0; i < N; i++) ids.push((await request(holder, 'POST', '/v1/sessions', { id: 'w' + i })).id);
const local = [], remote = [];
const startUs = { v: Infinity };
const ends = [];
for (const id of ids) {
  ends.push(stream(holder, id, local, startUs));
  ends.push(stream(other, id, remote, startUs));
}
await new Promise((r) => setTimeout(r, 500)); // every stream open
startUs.v = nowUs();
const t0 = Date.now();
for (let k = 0; k < T; k++)
  await Promise.all(ids.map((id) => request(holder, 'POST', `/v1/sessions/${id}/messages`, { content: 'go', if_busy: 'enqueue' })));
await Promise.all(ends);
const ms = Date.now() - t0;
function pct(a, p) { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : null; }
console.log(JSON.stringify({ frames_local: local.length, frames_remote: remote.length,
  local_p50_ms: pct(local, 0.5), local_p99_ms: pct(local, 0.99),
  remote_p50_ms: pct(remote, 0.5), remote_p99_ms: pct(remote, 0.99), ms }));
agent.destroy();
