// openai_agents.mjs BASE_URL INPUT.jsonl CONCURRENCY - the peer benchmark's OpenAI Agents SDK
// side (bench/bench_peers.sh): an agent on the chat completions model (streamed, as agentc
// streams), with a calculator tool and tracing off, one run per line of INPUT.
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { calculate, runAll } from './common.mjs';

const [baseURL, input, conc] = process.argv.slice(2);
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey: 'x', maxRetries: 0 });
const calculator = tool({
  name: 'calculator',
  description: 'Evaluates an arithmetic expression.',
  parameters: z.object({ expression: z.string() }),
  execute: async ({ expression }) => String(calculate(expression)),
});
const agent = new Agent({
  name: 'calculator',
  instructions: 'You are a calculator.',
  model: new OpenAIChatCompletionsModel(client, 'bench'),
  tools: [calculator],
});
await runAll(input, Number(conc), async (prompt) => {
  const result = await run(agent, prompt, { stream: true });
  for await (const _ of result); // eslint-disable-line no-unused-vars
  await result.completed;
  return result.finalOutput;
});
