// Module hooks for node20.mjs: "fs" imported from the conformance package resolves to fs_shim.mjs.
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
      context.parentURL.includes('/@modelcontextprotocol/conformance/')) {
    return { url: new URL('./fs_shim.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
