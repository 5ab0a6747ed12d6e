// bench/serve_clients.mjs - N concurrent SSE clients on N live sessions of agentc serve.
// Each client opens its session's event stream, then every session gets one message; the
// scripted model streams the answer. Reports, as one JSON line: events delivered, the delay
// from each event's append to the server's log (its t_us) to the client receiving it
// (p50/p99), and the server's CPU time (from /proc/PID/stat) and RSS over the streaming.
// Usage: node bench/serve_clients.mjs BASE_URL SERVER_PID N
import http from 'node:http';
import { readFileSync } from 'node:fs';

const [base, pid, nStr] = process.argv.slice(2);
const N = Number(nStr);
const url = new URL(base);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const tick = 100; // USER_HZ: clock ticks per second in /proc/PID/stat on Linux
function cpuMs() {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / tick; // utime + stime
}
function rssKb() {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}
function nowUs() { return (performance.timeOrigin + performance.now()) * 1000; }
function request(method, path, body) {
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
async function pool(n, k, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: k }, async () => { while (i < n) await fn(i++); }));
}
const ids = [];
await pool(N, 32, async (i) => { ids[i] = (await request('POST', '/v1/sessions', { id: 'b' + i })).id; });
const delays = [];
let startUs = Infinity; // events appended from the first message on are measured
let events = 0;
let done = 0;
let allDone;
const finished = new Promise((r) => (allDone = r));
let connected = 0;
let allConnected;
const ready = new Promise((r) => (allConnected = r));
for (const id of ids) {
  const r = http.get({ host: url.hostname, port: url.port, path: `/v1/sessions/${id}/events`, agent: false }, (res) => {
    if (++connected === N) allConnected();
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
        events++;
        if (d.t_us >= startUs) delays.push((t - d.t_us) / 1000); /* not replays of older events */
        if (/^event: turn_done$/m.test(block)) {
          res.destroy();
          if (++done === N) allDone();
        }
      }
    });
  });
  r.on('error', (e) => { console.error('stream: ' + e.message); process.exit(1); });
}
await ready;
const baseEvents = events; // spawn events already in the logs
const cpu0 = cpuMs();
const t0 = Date.now();
startUs = nowUs();
await pool(N, 32, async (i) => { await request('POST', `/v1/sessions/${ids[i]}/messages`, { content: 'go' }); });
await finished;
const cpu1 = cpuMs();
const rss = rssKb();
const wall = Date.now() - t0;
delays.sort((a, b) => a - b);
const q = (p) => delays[Math.min(delays.length - 1, Math.floor(p * delays.length))];
const streamed = events - baseEvents;
console.log(JSON.stringify({ clients: N, events: streamed, events_per_session: streamed / N,
  p50_ms: +q(0.5).toFixed(3), p99_ms: +q(0.99).toFixed(3), server_cpu_ms: cpu1 - cpu0,
  cpu_us_per_event: +(((cpu1 - cpu0) * 1000) / streamed).toFixed(2), rss_kb: rss, wall_ms: wall }));
agent.destroy();
process.exit(0);
