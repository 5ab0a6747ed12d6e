// bench/loop_stall.mjs - the parts of bench_loop_stall.sh:
//   node loop_stall.mjs proxy LISTEN_PORT TARGET_PORT DELAY_MS [DELAY_FILE]
//     a TCP proxy on 127.0.0.1 that holds every chunk DELAY_MS before passing it on, both ways
//     (a database that answers slowly: each round trip takes 2 x DELAY_MS more); DELAY_FILE,
//     once it exists, holds the delay instead (made longer while the proxy runs, never shorter:
//     the chunks stay in order)
//   node loop_stall.mjs probe URL MS
//     GET URL (a route answered on the server's loop, /healthz) one after another for MS ms;
//     prints {"n", "p50_ms", "p99_ms", "max_ms"} of the answers' times: the longest loop stall
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

const [mode, ...args] = process.argv.slice(2);

function proxy(listen, target, delay, file) {
  const now = () => {
    try { return file ? +fs.readFileSync(file, 'utf8') || delay : delay; } catch { return delay; }
  };
  net.createServer((c) => {
    const s = net.connect(target, '127.0.0.1');
    const pass = (from, to) => {
      from.on('data', (b) => setTimeout(() => to.writable && to.write(b), now()));
      from.on('end', () => setTimeout(() => to.end(), now()));
      from.on('error', () => to.destroy());
    };
    pass(c, s);
    pass(s, c);
  }).listen(listen, '127.0.0.1');
}

function once(url) {
  return new Promise((done) => {
    const t0 = process.hrtime.bigint();
    const req = http.get(url, { agent: false, timeout: 30000 }, (res) => {
      res.resume();
      res.on('end', () => done(Number(process.hrtime.bigint() - t0) / 1e6));
    });
    req.on('error', () => done(-1));
    req.on('timeout', () => req.destroy());
  });
}

async function probe(url, ms) {
  const times = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const t = await once(url);
    if (t >= 0) times.push(t);
    await new Promise((r) => setTimeout(r, 5));
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))] || 0;
  const r = (v) => Math.round(v * 10) / 10;
  console.log(JSON.stringify({ n: times.length, p50_ms: r(at(0.5)), p99_ms: r(at(0.99)),
    max_ms: r(times[times.length - 1] || 0) }));
}

if (mode === 'proxy') proxy(+args[0], +args[1], +args[2], args[3]);
else if (mode === 'probe') await probe(args[0], +args[1]);
else { console.error('usage: loop_stall.mjs proxy|probe ...'); process.exit(2); }
