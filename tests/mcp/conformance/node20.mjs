// Loaded with `node --import` to run @modelcontextprotocol/conformance 0.1.16 on node 20: that
// version imports fs.globSync (node 22+) for one summary feature; this hook gives it a module
// "fs" with everything of node:fs plus a small globSync (patterns "**/NAME" only).
import { register } from 'node:module';
register(new URL('./node20_hooks.mjs', import.meta.url));
