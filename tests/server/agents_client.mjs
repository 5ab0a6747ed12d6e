// The official `openai` npm package against agentc serve --agents: models.list names the
// agents, a chat completion by agent name (model "math"), and an unknown model's 404
// model_not_found. Usage: node agents_client.mjs BASE_URL (the package from OPENAI_MODULE).
const [base] = process.argv.slice(2);
const { pathToFileURL } = await import('node:url');
const { default: OpenAI } = await import(pathToFileURL(process.env.OPENAI_MODULE + '/index.mjs').href);
const client = new OpenAI({ baseURL: base, apiKey: 'unused', timeout: 20000, maxRetries: 0 });
function check(cond, what) {
  if (!cond) {
    console.error('FAIL: ' + what);
    process.exit(1);
  }
}
const ids = [];
for await (const m of await client.models.list()) ids.push(m.id);
check(JSON.stringify(ids) === '["support","math"]', 'models.list: ' + JSON.stringify(ids));

const r = await client.chat.completions.create({
  model: 'math',
  messages: [{ role: 'user', content: 'What is 6 * 7?' }],
});
check(r.choices[0].message.content === 'The answer is 42.', 'content: ' + r.choices[0].message.content);
check(r.model === 'math', 'model: ' + r.model);

let text = '';
const stream = await client.chat.completions.create({
  model: 'math',
  messages: [{ role: 'user', content: 'What is 2 + 3?' }],
  stream: true,
});
for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
check(text === 'The answer is 5.', 'streamed: ' + text);

try {
  await client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] });
  check(false, 'an unknown model was accepted');
} catch (e) {
  check(e.status === 404, 'unknown model status: ' + e.status);
  check(e.code === 'model_not_found', 'unknown model code: ' + e.code);
}
console.log('agents client: ok');
