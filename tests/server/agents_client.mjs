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
// a history is passed as messages; the request's settings reach an agent that lets a session
// override its request settings, and its tools are offered beside the agent's (client tools);
// what the front does not use is named in X-Agentc-Ignored
const hist = await client.chat.completions
  .create({
    model: 'support',
    temperature: 0.3,
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'hello with history' },
    ],
  })
  .withResponse();
check(hist.response.headers.get('x-agentc-ignored') === null,
  'support: ignored ' + hist.response.headers.get('x-agentc-ignored'));
const fixed = await client.chat.completions
  .create({ model: 'math', temperature: 0.9, messages: [{ role: 'user', content: 'What is 1 + 2?' }] })
  .withResponse();
check(fixed.data.choices[0].message.content === 'The answer is 3.', 'math: ' + fixed.data.choices[0].message.content);
check(fixed.response.headers.get('x-agentc-ignored') === 'temperature',
  'math: ignored ' + fixed.response.headers.get('x-agentc-ignored'));
const streamed = await client.chat.completions
  .create({ model: 'math', stream: true, top_p: 0.5, messages: [{ role: 'user', content: 'What is 2 + 2?' }] })
  .withResponse();
text = '';
for await (const chunk of streamed.data) text += chunk.choices[0]?.delta?.content ?? '';
check(text === 'The answer is 4.', 'streamed math: ' + text);
check(streamed.response.headers.get('x-agentc-ignored') === 'top_p',
  'streamed: ignored ' + streamed.response.headers.get('x-agentc-ignored'));
console.log('agents client: ok');
