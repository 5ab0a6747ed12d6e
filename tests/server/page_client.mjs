// Drives Debian's chromium (headless) over the DevTools protocol to use the audit page of
// agentc serve like a person: open it with a token, create a session, send a message, and
// watch the answer stream in and the highlighted states change. Saves a screenshot.
// Usage: node --experimental-websocket page_client.mjs URL TOKEN EXPECTED SCREENSHOT
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [url, token, expected, shot] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), 'agentc-chromium-'));
const bin = process.env.CHROMIUM || 'chromium';
const browser = spawn(bin, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-extensions', '--remote-debugging-port=0', '--user-data-dir=' + profile,
  '--window-size=1400,900', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
let done = false;
function finish(code, msg) {
  if (done) return;
  done = true;
  if (msg) console.error(msg);
  browser.kill('SIGKILL');
  setTimeout(() => { try { rmSync(profile, { recursive: true, force: true }); } catch {} process.exit(code); }, 200);
}
setTimeout(() => finish(1, 'FAIL: timed out'), 60000).unref();
const wsUrl = await new Promise((resolve) => {
  let err = '';
  browser.stderr.on('data', (b) => {
    err += b;
    const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  browser.on('exit', () => finish(1, 'FAIL: chromium exited: ' + err.slice(-500)));
});
const port = new URL(wsUrl).port;
const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
const page = targets.find((t) => t.type === 'page');
const ws = new WebSocket(page.webSocketDebuggerUrl);
await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
let nextId = 1;
const waiting = new Map();
const consoleErrors = [];
let dialogs = [], acceptDialog = true; /* confirm() boxes seen, and the answer to give */
ws.onmessage = (m) => {
  const msg = JSON.parse(m.data);
  if (msg.method === 'Page.javascriptDialogOpening') {
    dialogs.push(msg.params.message);
    ws.send(JSON.stringify({ id: nextId++, method: 'Page.handleJavaScriptDialog', params: { accept: acceptDialog } }));
  }
  if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
  if (msg.method === 'Runtime.exceptionThrown') consoleErrors.push(JSON.stringify(msg.params.exceptionDetails).slice(0, 300));
  if (msg.method === 'Log.entryAdded' && msg.params.entry.level === 'error') consoleErrors.push(msg.params.entry.text + ' ' + (msg.params.entry.url || ''));
};
function cdp(method, params = {}) {
  const id = nextId++;
  ws.send(JSON.stringify({ id, method, params }));
  return new Promise((r) => waiting.set(id, r));
}
async function js(expr) {
  const r = await cdp('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true });
  if (r.result.exceptionDetails) throw new Error('page: ' + JSON.stringify(r.result.exceptionDetails).slice(0, 300));
  return r.result.result.value;
}
async function until(expr, what, ms = 15000) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await js(expr)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  finish(1, 'FAIL: ' + what + '; page text: ' + (await js('document.body.innerText')).slice(0, 800));
  await new Promise(() => {});
}
function check(cond, what) { if (!cond) { finish(1, 'FAIL: ' + what); throw new Error(what); } }

await cdp('Runtime.enable');
await cdp('Log.enable');
await cdp('Page.enable');
await cdp('Page.navigate', { url: url + '/?token=' + encodeURIComponent(token) });
await until(`document.querySelectorAll('svg[data-machine]').length === 3`, 'the spec diagram was not drawn');
await until(`document.getElementById('status').textContent === 'ready'`, 'the page is not ready');
// the token of a link is adopted once the user says so, and leaves the address bar
check(dialogs.length === 1 && dialogs[0].includes('bearer token'), 'the link\'s token adopted unasked: ' + JSON.stringify(dialogs));
check(!(await js('location.href')).includes('token='), 'the token stays in the address bar: ' + (await js('location.href')));
dialogs = [];
if (process.env.AGENT_SESSION) { // a session of another agent: the page draws that agent's spec
  check(await js(`!document.querySelector('svg[data-machine=conversation]')`), 'the default spec drawn first');
  await cdp('Page.navigate', { url: url + '/?token=' + encodeURIComponent(token) + '&session=' + process.env.AGENT_SESSION });
  await until(`!!document.querySelector('svg[data-machine=conversation]') && !document.querySelector('svg[data-machine=session]')`,
    "the session's agent's spec was not drawn");
  await until(`!!document.querySelector('.state.current[data-machine=conversation][data-state=Idle]')`, 'Idle is not highlighted');
  check(consoleErrors.length === 0, 'page errors: ' + consoleErrors.join('; '));
  console.log('audit page: ok, the agent\'s spec');
  finish(0);
  await new Promise(() => {});
}
await js(`document.getElementById('new-session').click()`);
await until(`document.getElementById('session-id').textContent.length > 0`, 'no session was created');
if (process.env.SUBAGENTS) { // two calls of agent::math: each child session under its call
  await js(`document.getElementById('input').value = 'delegate'; document.getElementById('send').click()`);
  await until(`[...document.querySelectorAll('.tool.call .child')].filter((c) => c.textContent.endsWith(': completed')).length === 2`,
    'the child sessions are not shown under their calls');
  const lines = await js(`[...document.querySelectorAll('.tool.call')].map((c) => c.dataset.call + '|' + c.querySelector('.child').textContent).join('\\n')`);
  check(/^s1\|.*child session \S+\.math\.s1 \(agent math\): completed\ns2\|.*\.math\.s2 \(agent math\): completed$/.test(lines),
    'the child lines: ' + lines);
  check(consoleErrors.length === 0, 'page errors: ' + consoleErrors.join('; '));
  console.log('audit page: ok, sub-agents');
  finish(0);
  await new Promise(() => {});
}
if (process.env.DECISIONS) { // a spec that asks before tools run: decide call by call
  const sess = () => js(`fetch('/v1/sessions/' + encodeURIComponent(document.getElementById('session-id').textContent), { headers: { Authorization: 'Bearer ${token}' } }).then((r) => r.json())`);
  await js(`document.getElementById('input').value = 'three sums'; document.getElementById('send').click()`);
  await until(`document.querySelectorAll('#waiting .decisions .call').length === 3`, 'the pending calls are not shown one by one');
  check(await js(`[...document.querySelectorAll('#waiting .call')].map((r) => r.dataset.call).join()`) === 'c1,c2,c3', 'the calls shown');
  check(await js(`!!document.querySelector('#waiting button[data-event=deny]')`), 'the deny-all button is gone');
  const choose = (id, v) => js(`(() => { const r = document.querySelector('#waiting .call[data-call=${id}]'); const c = r.querySelector('.choice');
    c.value = '${v}'; c.dispatchEvent(new Event('change')); return !r.querySelector('.reason').hidden + ',' + !r.querySelector('.arguments').hidden; })()`);
  check(await choose('c2', 'deny') === 'true,false', 'deny shows the reason field');
  check(await choose('c3', 'edit') === 'false,true', 'edit shows the arguments');
  await js(`document.querySelector('#waiting .call[data-call=c2] .reason').value = 'not that one'`);
  // an edit the tool's schema refuses: shown, nothing applied, the form kept
  await js(`document.querySelector('#waiting .call[data-call=c3] .arguments').value = '{"expression": 7}'; document.querySelector('#waiting button.submit').click()`);
  await until(`document.querySelector('#waiting .decision-error').textContent.includes('invalid_decisions')`, 'the refused decisions were not shown');
  check((await js(`document.querySelector('#waiting .decision-error').textContent`)).includes('do not fit the schema of calculator'), 'the reason of the refusal');
  { const j = await sess(); check(j.waiting && j.waiting.calls.length === 3, 'the refused decisions moved the session: ' + JSON.stringify(j).slice(0, 300)); }
  await js(`document.querySelector('#waiting .call[data-call=c3] .arguments').value = '{"expression": "10*10"}'; document.querySelector('#waiting button.submit').click()`);
  await until(`[...document.querySelectorAll('.msg.assistant .text')].map((e) => e.textContent).filter((t) => t).pop() === 'done'`, 'the turn did not go on to its answer');
  await until(`document.getElementById('waiting').textContent === ''`, 'the decisions form stayed');
  const j = await sess();
  const result = (id) => (j.tool_calls.find((c) => c.id === id) || {}).result || '';
  check(result('c1') === '2', 'c1 (approved): ' + result('c1'));
  check(result('c2').includes('denied by the user: not that one'), 'c2 (denied): ' + result('c2'));
  check(result('c3').includes('100') && result('c3').includes('arguments edited by the user'), 'c3 (edited): ' + result('c3'));
  const all = await js(`document.getElementById('messages').innerText`);
  check(all.includes('denied by the user: not that one') && all.includes('arguments edited by the user'), 'the results are not shown: ' + all.slice(-800));
  // one bubble per call, approved or not
  const shown = await js(`[...document.querySelectorAll('.tool.call')].map((c) => c.dataset.call).join()`);
  check(shown === 'c1,c2,c3', 'the calls shown: ' + shown);
  // the session list says how the session stands now
  await until(`(document.getElementById('session-select').selectedOptions[0] || {textContent: ''}).textContent.endsWith('(idle)')`,
    'the session list: not idle after the turn: ' + await js(`document.getElementById('session-select').innerHTML`));
  // a reload shows each call's result beside it, as the live view did
  const sid = await js(`document.getElementById('session-id').textContent`);
  await cdp('Page.navigate', { url: url + '/?session=' + encodeURIComponent(sid) });
  await until(`(document.getElementById('messages') || { innerText: '' }).innerText.includes('denied by the user: not that one')`, 'reload: the results are not shown');
  const again = await js(`[...document.querySelectorAll('.tool.result')].map((e) => e.textContent)`);
  check(again.length === 3 && again.includes('\u2190 calculator: 2') && again.includes('\u2190 calculator: denied by the user: not that one') &&
    again.some((t) => t.startsWith('\u2190 calculator: arguments edited by the user') && t.endsWith('100')),
    'reload: the results: ' + JSON.stringify(again));
  check(await js(`[...document.querySelectorAll('.tool.call')].map((c) => c.dataset.call).join()`) === 'c1,c2,c3', 'reload: the calls');
  const unexpected = consoleErrors.filter((e) => !(e.includes('400 (Bad Request)') && e.includes('/events/approve')));
  check(unexpected.length === 0, 'page errors: ' + consoleErrors.join('; '));
  console.log('audit page: ok, per-call decisions');
  finish(0);
  await new Promise(() => {});
}
await until(`!!document.querySelector('.state.current[data-machine=session][data-state=Idle]')`, 'Idle is not highlighted');
// the page sends as the API does by default (if_busy reject)
check(await js(`document.getElementById('if-busy').value`) === 'reject', 'if_busy default: ' + await js(`document.getElementById('if-busy').value`));
// every machine can be seen whole at 1400x900: picked, it is the only one drawn
await js(`(() => { const p = document.getElementById('machine-pick'); p.value = 'process'; p.dispatchEvent(new Event('change')); })()`);
{ const r = await js(`(() => { const b = document.querySelector('svg[data-machine=process]').getBoundingClientRect();
    return { top: b.top, bottom: b.bottom, h: innerHeight, others: [...document.querySelectorAll('#diagram .machine')].filter((m) => !m.hidden).length }; })()`);
  check(r.others === 1 && r.top >= 0 && r.bottom <= r.h, 'the process machine picked: ' + JSON.stringify(r)); }
await js(`(() => { const p = document.getElementById('machine-pick'); p.value = ''; p.dispatchEvent(new Event('change')); })()`);
// no label stacked on another: a state's self-loops are listed inside its box, apart
{ const bad = await js(`(() => { const out = [];
    for (const t of document.querySelectorAll('.edge.loop text')) {
      const g = t.closest('svg'), key = t.parentNode.dataset.key.split('|');
      const box = g.querySelector('.state[data-state="' + key[1] + '"] rect').getBoundingClientRect(), b = t.getBoundingClientRect();
      if (b.top < box.top || b.bottom > box.bottom + 1) out.push(key.join('|') + ' outside its state');
      for (const u of t.closest('svg').querySelectorAll('.edge.loop text')) if (u !== t) {
        const c = u.getBoundingClientRect();
        if (b.left < c.right && c.left < b.right && b.top < c.bottom - 2 && c.top < b.bottom - 2) out.push(key.join('|') + ' over another');
      }
    } return out; })()`);
  check(bad.length === 0, 'stacked labels: ' + bad.join('; '));
  check(await js(`document.querySelectorAll('.edge.loop').length`) > 0, 'no self-loop listed'); }
// send a message the way a person does
await js(`document.getElementById('input').value = 'tell me a story'; document.getElementById('send').click()`);
// the answer streams in: seen partial, then whole; Running is highlighted on the way
const seen = { partial: false, running: false, streaming: false };
const t0 = Date.now();
for (;;) {
  const s = await js(`({
    text: (document.querySelector('.msg.assistant .text') || {}).textContent || '',
    session: (document.querySelector('.state.current[data-machine=session]') || {dataset:{}}).dataset.state,
    process: (document.querySelector('.state.current[data-machine=process]') || {dataset:{}}).dataset.state,
    listed: document.getElementById('session-select').selectedOptions[0].textContent })`);
  if (s.listed.endsWith('(running)')) seen.listed = true;
  if (s.text.length > 0 && s.text.length < expected.length) seen.partial = true;
  if (s.session === 'Running') seen.running = true;
  if (s.process === 'STREAMING') seen.streaming = true;
  if (s.text === expected && s.session === 'Idle') break;
  if (Date.now() - t0 > 20000) finish(1, 'FAIL: the answer did not arrive: ' + JSON.stringify(s));
  await new Promise((r) => setTimeout(r, 20));
}
check(seen.partial, 'the answer did not stream (never seen partial)');
check(seen.running, 'session Running was never highlighted');
check(seen.streaming, 'process STREAMING was never highlighted');
check(seen.listed, 'the session list never said the session was running');
await until(`document.getElementById('session-select').selectedOptions[0].textContent.endsWith('(idle)')`, 'the session list: not idle after the turn');
const user = await js(`document.querySelector('.msg.user').textContent`);
check(user === 'tell me a story', 'user message: ' + user);
const counts = await js(`Object.fromEntries([...document.querySelectorAll('.edge')].map((g) => [g.dataset.key, +g.querySelector('text').dataset.count]).filter((e) => e[1] > 0))`);
check(counts['session|Idle|Running|user_message'] === 1, 'edge count Idle->Running: ' + JSON.stringify(counts));
check(counts['process|CALLING|STREAMING|llm.started'] === 1, 'edge count CALLING->STREAMING: ' + JSON.stringify(counts));
check(await js(`document.querySelectorAll('.edge.taken').length`) >= 4, 'taken edges');
// a reload rebuilds the same view from the session and its event log
const sid = await js(`document.getElementById('session-id').textContent`);
await cdp('Page.navigate', { url: url + '/?session=' + encodeURIComponent(sid) });
await until(`(document.querySelector('.msg.assistant .text') || {}).textContent === ${JSON.stringify(expected)}`, 'reload: answer');
await until(`+((document.querySelector('.edge[data-key="session|Idle|Running|user_message"] text') || {dataset:{}}).dataset.count) === 1`, 'reload: counts');
// a model call that streams HALF-ANSWER, fails (503, retryable) and is retried: the page
// shows the partial text while it stands, then only the final answer
// (the partial text stands for a moment only: an observer of the view records that it was shown,
// as a poll may miss it on a loaded machine)
await js(`window.sawHalf = false; new MutationObserver((rs) => { for (const r of rs) for (const n of r.addedNodes)
  if ((n.textContent || '').includes('HALF-ANSWER')) window.sawHalf = true; })
  .observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true })`);
await js(`document.getElementById('input').value = 'again'; document.getElementById('send').click()`);
let sawHalf = false;
const t1 = Date.now();
for (;;) {
  const s = await js(`({ all: document.getElementById('messages').innerText,
    last: [...document.querySelectorAll('.msg.assistant .text')].map((e) => e.textContent).filter((t) => t).pop() || '',
    session: (document.querySelector('.state.current[data-machine=session]') || {dataset:{}}).dataset.state })`);
  if (s.all.includes('HALF-ANSWER')) sawHalf = true;
  if (s.last === 'FULL ANSWER' && s.session === 'Idle') break;
  if (Date.now() - t1 > 20000) finish(1, 'FAIL: the retried answer did not arrive: ' + JSON.stringify(s));
  await new Promise((r) => setTimeout(r, 20));
}
sawHalf = sawHalf || await js('window.sawHalf');
check(sawHalf, 'the partial answer was never shown (the retry scenario did not happen)');
const texts = await js(`[...document.querySelectorAll('.msg.assistant .text')].map((e) => e.textContent)`);
check(!(await js(`document.getElementById('messages').innerText`)).includes('HALF-ANSWER'),
  'the discarded text is still shown: ' + JSON.stringify(texts));
check(texts.filter((t) => t).slice(-1)[0] === 'FULL ANSWER', 'answers shown: ' + JSON.stringify(texts));
// a long answer streaming, then a message sent with if_busy interrupt: the partial answer
// leaves the view, and the turn goes on to its answer
await js(`document.getElementById('input').value = 'a long one'; document.getElementById('send').click()`);
await until(`document.getElementById('messages').innerText.includes('lw20 ')`, 'the long answer did not stream');
await js(`document.getElementById('if-busy').value = 'interrupt'; document.getElementById('input').value = 'stop that'; document.getElementById('send').click()`);
await until(`[...document.querySelectorAll('.msg.assistant .text')].map((e) => e.textContent).filter((t) => t).pop() === 'AFTER INTERRUPT'`,
  'the interrupted turn did not end');
{ const all = await js(`document.getElementById('messages').innerText`); check(!all.includes('lw1 '), 'the interrupted partial answer is still shown: ' + all.slice(-1500)); }
// Cancel stops the streaming turn and keeps the session: at rest, the turn cancelled, and the
// next message answered on the same conversation
await until(`!!document.querySelector('.state.current[data-machine=session][data-state=Idle]')`, 'Idle is not highlighted after the interrupted turn');
const sess = () => js(`fetch('/v1/sessions/' + encodeURIComponent(document.getElementById('session-id').textContent), { headers: { Authorization: 'Bearer ${token}' } }).then((r) => r.json())`);
await js(`document.getElementById('if-busy').value = 'reject'; document.getElementById('input').value = 'cancel me'; document.getElementById('send').click()`);
await until(`document.getElementById('messages').innerText.includes('cw20 ')`, 'the answer to cancel did not stream');
await js(`document.getElementById('cancel').click()`);
await until(`document.getElementById('messages').innerText.includes('stopped: cancelled')`, 'Cancel did not stop the turn');
await until(`!!document.querySelector('.state.current[data-machine=session][data-state=Idle]')`, 'Idle is not highlighted after Cancel');
{ const j = await sess(); check(j.status === 'idle' && j.last_turn.outcome === 'cancelled' && !j.ended, 'after Cancel: ' + JSON.stringify(j).slice(0, 300)); }
await js(`document.getElementById('input').value = 'still there?'; document.getElementById('send').click()`);
await until(`[...document.querySelectorAll('.msg.assistant .text')].map((e) => e.textContent).filter((t) => t).pop() === 'AFTER CANCEL'`,
  'the turn after Cancel did not answer');
await until(`!!document.querySelector('.state.current[data-machine=session][data-state=Idle]')`, 'Idle is not highlighted after the turn after Cancel');
{ const j = await sess(); check(j.status === 'idle' && j.last_turn.outcome === 'completed' && j.messages.some((m) => m.content === 'cancel me'),
  'after the next turn: ' + JSON.stringify(j).slice(0, 300)); }
// closing the session asks first: refused, nothing happens; accepted, the session ends and a
// message to it is refused, saying how and when it ended
acceptDialog = false;
await js(`document.getElementById('close-session').click()`);
check(dialogs.length === 1 && dialogs[0].includes('Close session'), 'no confirmation asked: ' + JSON.stringify(dialogs));
{ const j = await sess(); check(j.status === 'idle' && !j.ended, 'closed without confirmation: ' + JSON.stringify(j).slice(0, 300)); }
acceptDialog = true;
await js(`document.getElementById('close-session').click()`);
await until(`document.getElementById('messages').innerText.includes('session closed')`, 'the session was not closed');
{ const j = await sess(); check(j.status === 'ended' && j.ended.how === 'closed', 'after closing: ' + JSON.stringify(j).slice(0, 300)); }
await js(`document.getElementById('input').value = 'hello?'; document.getElementById('send').click()`);
await until(`/session_ended: session .* ended \\(closed\\) at .*; start a new one/.test(document.getElementById('messages').innerText)`,
  'the closed session did not refuse the message clearly');
const png = await cdp('Page.captureScreenshot', { format: 'png' });
writeFileSync(shot, Buffer.from(png.result.data, 'base64'));
{ /* the refused message's 409 is the one error expected */
  const unexpected = consoleErrors.filter((e) => !(e.includes('409 (Conflict)') && e.includes('/messages')));
  check(consoleErrors.length === 1 && unexpected.length === 0, 'page errors: ' + consoleErrors.join('; ')); }
console.log('audit page: ok, screenshot ' + shot);
finish(0);
