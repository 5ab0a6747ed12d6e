// node:fs plus globSync for "**/NAME" patterns (see node20.mjs).
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;
export function globSync(pattern, opts = {}) {
  if (fs.globSync) return fs.globSync(pattern, opts);
  const cwd = opts.cwd || process.cwd();
  const name = pattern.replace(/^\*\*\//, '');
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(cwd, rel), { withFileTypes: true })) {
      const r = rel ? path.join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.name === name) out.push(r);
    }
  };
  walk('');
  return out;
}
