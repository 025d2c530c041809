// The official OpenAI Node client's tool-calling flow against lmrt serve: a request with tools and
// tool_choice "required" gives tool_calls; the same streamed (deltas accumulated as the client's
// helpers do, the arguments arriving in fragments as they are generated); the tool's result goes
// back as a `tool` message and the model answers. Prints a JSON summary that server_test.py checks.
import OpenAI from "openai";

const [baseURL, model, toolsJson] = process.argv.slice(2);
const tools = JSON.parse(toolsJson);
const client = new OpenAI({ baseURL, apiKey: "unused", timeout: 30000, maxRetries: 0 });
const messages = [{ role: "user", content: "What is the weather in Paris?" }];

const first = await client.chat.completions.create({
  model, messages, tools, tool_choice: "required", max_tokens: 200, temperature: 0,
});
const choice = first.choices[0];
const call = choice.message.tool_calls[0];

// Streamed: the deltas accumulated by index.
const stream = await client.chat.completions.create({
  model, messages, tools, tool_choice: "required", max_tokens: 200, temperature: 0, stream: true,
});
const acc = {};
let fragments = 0;  // chunks carrying a piece of the first call's arguments: streamed as generated
for await (const chunk of stream) {
  for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
    const c = (acc[tc.index] ??= { name: "", arguments: "" });
    if (tc.function?.name) c.name += tc.function.name;
    if (tc.function?.arguments) c.arguments += tc.function.arguments;
    if (tc.index === 0 && tc.function?.arguments) fragments += 1;
  }
}

// The tool runs here; its result goes back with the assistant's call.
const result = { temperature: 21, unit: "celsius" };
const followUp = [
  ...messages,
  choice.message,
  { role: "tool", tool_call_id: call.id, content: JSON.stringify(result) },
];
const answer = await client.chat.completions.create({ model, messages: followUp, tools, max_tokens: 24, temperature: 0 });

console.log(JSON.stringify({
  finish: choice.finish_reason,
  call,
  streamed_call: acc[0] ?? null,
  streamed_fragments: fragments,
  answer: answer.choices[0].message.content,
  answer_finish: answer.choices[0].finish_reason,
}));
