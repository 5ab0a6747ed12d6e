// langgraph.mjs BASE_URL INPUT.jsonl CONCURRENCY - the peer benchmark's LangGraph.js side
// (bench/bench_peers.sh): a prebuilt ReAct agent over LangChain's OpenAI chat model (streamed,
// as agentc streams), with a calculator tool, one graph run per line of INPUT.
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { calculate, runAll } from './common.mjs';

// LangChain's streamed chat model counts the tokens of every call with tiktoken, whose encoding
// it fetches from the web once per model; this machine has no web, so that fetch is answered
// from the encodings js-tiktoken ships (the counting itself runs as it would).
const webFetch = globalThis.fetch;
globalThis.fetch = (url, init) => {
  const enc = /^https:\/\/tiktoken\.pages\.dev\/js\/(\w+)\.json$/.exec(String(url));
  return enc
    ? import(`js-tiktoken/ranks/${enc[1]}`).then((r) => new Response(JSON.stringify(r.default)))
    : webFetch(url, init);
};

const [baseURL, input, conc] = process.argv.slice(2);
const llm = new ChatOpenAI({
  model: 'bench',
  apiKey: 'x',
  streaming: true,
  maxRetries: 0,
  configuration: { baseURL },
});
const calculator = tool(({ expression }) => String(calculate(expression)), {
  name: 'calculator',
  description: 'Evaluates an arithmetic expression.',
  schema: z.object({ expression: z.string() }),
});
const agent = createReactAgent({ llm, tools: [calculator] });
await runAll(input, Number(conc), async (prompt) => {
  const out = await agent.invoke({ messages: [{ role: 'user', content: prompt }] });
  return out.messages.at(-1).content;
});
