// bench/serve_create.mjs BASE_URL N: creates sessions k1..kN (32 requests at a time, keep-alive).
import http from 'node:http';
const [base, nStr] = process.argv.slice(2);
const url = new URL(base);
const N = Number(nStr);
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
function create(i) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/v1/sessions', agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error('status ' + res.statusCode))));
    });
    r.on('error', reject);
    r.end(JSON.stringify({ id: 'k' + i }));
  });
}
let i = 0;
await Promise.all(Array.from({ length: 32 }, async () => { while (i < N) await create(++i); }));
agent.destroy();
