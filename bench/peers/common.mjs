// common.mjs - what the peer scripts share (bench/bench_peers.sh): the calculator tool's
// arithmetic and the batch runner, so the peers differ only in the framework they drive.
import { readFileSync } from 'node:fs';

// The value of an arithmetic expression of numbers, + - * / and parentheses (the calculator
// tool's job), by recursive descent; throws on anything else.
export function calculate(text) {
  const toks = text.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) || [];
  let i = 0;
  const atom = () => {
    const t = toks[i++];
    if (t === '(') {
      const v = sum();
      if (toks[i++] !== ')') throw new Error('missing )');
      return v;
    }
    if (t === '-') return -atom();
    if (t === undefined || !/^\d/.test(t)) throw new Error(`unexpected ${t}`);
    return Number(t);
  };
  const product = () => {
    let v = atom();
    while (toks[i] === '*' || toks[i] === '/') v = toks[i++] === '*' ? v * atom() : v / atom();
    return v;
  };
  const sum = () => {
    let v = product();
    while (toks[i] === '+' || toks[i] === '-') v = toks[i++] === '+' ? v + product() : v - product();
    return v;
  };
  const v = sum();
  if (i !== toks.length) throw new Error(`unexpected ${toks[i]}`);
  return v;
}

// Runs session(prompt) for each line ({"id", "prompt"}) of the JSONL file at most `conc` at a
// time; prints one line per session ({"id", "status", "output"}), as agentc batch does, and
// exits 1 when one failed.
export async function runAll(file, conc, session) {
  const jobs = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      try {
        const output = await session(job.prompt);
        process.stdout.write(JSON.stringify({ id: job.id, status: 'completed', output }) + '\n');
      } catch (err) {
        failed++;
        process.stdout.write(JSON.stringify({ id: job.id, status: 'failed', error: String(err) }) + '\n');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(conc, jobs.length) }, worker));
  process.exitCode = failed ? 1 : 0;
}
