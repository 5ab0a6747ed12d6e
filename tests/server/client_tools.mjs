// Client tools on the OpenAI-compatible front with the official `openai` npm package: a
// request with `tools` gets the model's calls of them as tool_calls (finish_reason
// "tool_calls", ids agentc_<session>_<n>), the agent's own calculator having run; the
// follow-up with the results continues that session and gets the answer; streamed (the
// package's stream helper assembles the calls) and not.
// Usage: node client_tools.mjs BASE_URL TOKEN (the package from OPENAI_MODULE).
const [base, token] = process.argv.slice(2);
const { pathToFileURL } = await import('node:url');
const { default: OpenAI } = await import(pathToFileURL(process.env.OPENAI_MODULE + '/index.mjs').href);
const client = new OpenAI({ baseURL: base, apiKey: token, timeout: 20000, maxRetries: 0 });
function check(cond, what) {
  if (!cond) {
    console.error('FAIL: ' + what);
    process.exit(1);
  }
}
const tools = [{
  type: 'function',
  function: {
    name: 'lookup',
    description: 'Looks a word up in the client',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  },
}];

async function session(id) {
  const r = await fetch(`${base}/sessions/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  return r.json();
}

// the calls returned: the client's two lookups, not the agent's own calculator call
function checkCalls(calls, what) {
  check(Array.isArray(calls) && calls.length === 2, what + ': calls ' + JSON.stringify(calls));
  for (const c of calls) {
    check(/^agentc_chatcmpl-[0-9]+_[0-9]+$/.test(c.id), what + ': id ' + c.id);
    check(c.type === 'function' && c.function.name === 'lookup', what + ': ' + JSON.stringify(c));
  }
  check(JSON.parse(calls[0].function.arguments).q === 'weather', what + ': arguments ' + calls[0].function.arguments);
  check(JSON.parse(calls[1].function.arguments).q === 'wind', what + ': arguments ' + calls[1].function.arguments);
  check(calls[0].id.replace(/_[0-9]+$/, '') === calls[1].id.replace(/_[0-9]+$/, ''), what + ': two sessions');
  check(calls[0].id !== calls[1].id, what + ': one id twice');
  return calls[0].id.replace(/^agentc_/, '').replace(/_[0-9]+$/, '');
}

async function followUp(messages, first, calls, stream) {
  messages.push({ role: 'assistant', content: first.content ?? null, tool_calls: calls });
  for (const c of calls)
    messages.push({ role: 'tool', tool_call_id: c.id, content: 'result of ' + JSON.parse(c.function.arguments).q });
  if (!stream)
    return (await client.chat.completions.create({ model: 'agentc', messages, tools })).choices[0];
  let text = '', finish = null;
  for await (const chunk of await client.chat.completions.create({ model: 'agentc', messages, tools, stream: true })) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  return { message: { content: text }, finish_reason: finish };
}

async function checkSession(sid, what) {
  const s = await session(sid);
  check(s.status === 'idle', what + ': status ' + s.status);
  const res = Object.fromEntries(s.tool_calls.map((c) => [c.name + ':' + c.id, c.result]));
  check(res['lookup:c1'] === 'result of weather' && res['lookup:c3'] === 'result of wind',
    what + ': the client results in the session: ' + JSON.stringify(res));
  check(res['calculator:c2'] === '42', what + ': the agent\'s own call: ' + JSON.stringify(res));
}

// not streamed
let messages = [{ role: 'user', content: 'What is the weather?' }];
const r1 = await client.chat.completions.create({ model: 'agentc', messages, tools });
check(r1.choices[0].finish_reason === 'tool_calls', 'finish_reason: ' + r1.choices[0].finish_reason);
check(r1.choices[0].message.content === 'Let me look.', 'content: ' + r1.choices[0].message.content);
let sid = checkCalls(r1.choices[0].message.tool_calls, 'plain');
let waiting = await session(sid);
check(waiting.status === 'running', 'the session waits: ' + waiting.status);
const r2 = await followUp(messages, r1.choices[0].message, r1.choices[0].message.tool_calls, false);
check(r2.finish_reason === 'stop' && r2.message.content === 'The lookup said sunny.',
  'follow-up: ' + JSON.stringify(r2));
await checkSession(sid, 'plain');

// streamed: the package's helper assembles the tool calls from the chunks
messages = [{ role: 'user', content: 'What is the weather?' }];
const st = client.chat.completions.stream({ model: 'agentc', messages, tools });
const done = await st.finalChatCompletion();
check(done.choices[0].finish_reason === 'tool_calls', 'streamed finish_reason: ' + done.choices[0].finish_reason);
check(done.choices[0].message.content === 'Let me look.', 'streamed content: ' + done.choices[0].message.content);
const scalls = done.choices[0].message.tool_calls.map((c) => ({ id: c.id, type: c.type, function: c.function }));
sid = checkCalls(scalls, 'streamed');
const s2 = await followUp(messages, done.choices[0].message, scalls, true);
check(s2.finish_reason === 'stop' && s2.message.content === 'The lookup said sunny.',
  'streamed follow-up: ' + JSON.stringify(s2));
await checkSession(sid, 'streamed');
console.log('client tools: ok');
