// The official `openai` npm package against agentc serve's OpenAI-compatible front:
// models.list, a chat completion, and a streamed one (with RETRIED set, the server's model
// call fails once after streaming some text and is retried). Usage: node openai_client.mjs
// BASE_URL TOKEN EXPECTED_ANSWER (NODE_PATH-free: the package is resolved from
// OPENAI_MODULE, the path of its folder).
const [base, token, expected] = process.argv.slice(2);
const { pathToFileURL } = await import('node:url');
const { default: OpenAI } = await import(pathToFileURL(process.env.OPENAI_MODULE + '/index.mjs').href);
const client = new OpenAI({ baseURL: base, apiKey: token, timeout: 20000, maxRetries: 0 });
function check(cond, what) {
  if (!cond) {
    console.error('FAIL: ' + what);
    process.exit(1);
  }
}
const models = await client.models.list();
const ids = [];
for await (const m of models) ids.push(m.id);
check(ids.includes('default'), 'models.list: ' + JSON.stringify(ids));

const r = await client.chat.completions.create({
  model: 'agentc',
  messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }],
});
check(r.object === 'chat.completion', 'object: ' + r.object);
check(r.choices[0].message.content === expected, 'content: ' + r.choices[0].message.content);
check(r.choices[0].finish_reason === 'stop', 'finish_reason');

const stream = await client.chat.completions.create({
  model: 'agentc',
  messages: [{ role: 'user', content: 'hello again' }],
  stream: true,
});
let text = '';
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? '';
}
check(text === expected, 'streamed: ' + text);
check(chunks > 2, 'streamed in ' + chunks + ' chunks');
if (process.env.RETRIED) { // the server's model call is retried: no more than the above
  console.log('openai client: ok, a retried call (' + chunks + ' chunks)');
  process.exit(0);
}

// a bad token is refused with the error shape OpenAI clients read
const bad = new OpenAI({ baseURL: base, apiKey: 'wrong-token-0123456789', maxRetries: 0 });
try {
  await bad.models.list();
  check(false, 'a bad token was accepted');
} catch (e) {
  check(e.status === 401, 'bad token status: ' + e.status);
}
console.log('openai client: ok (' + chunks + ' chunks)');
