// Drives lmrt serve with the official OpenAI Node client: one chat completion, then the same
// request streamed; prints a JSON summary that server_test.py checks.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", timeout: 30000, maxRetries: 0 });
const messages = [{ role: "user", content: "Tell me a story about a cat." }];

const full = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
let streamed = "";
let finish = null;
let chunks = 0;
const stream = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0, stream: true });
for await (const chunk of stream) {
  chunks += 1;
  const choice = chunk.choices[0];
  if (choice?.delta?.content) streamed += choice.delta.content;
  if (choice?.finish_reason) finish = choice.finish_reason;
}
const models = await client.models.list();
console.log(JSON.stringify({
  text: full.choices[0].message.content,
  finish: full.choices[0].finish_reason,
  usage: full.usage,
  streamed,
  stream_finish: finish,
  chunks,
  models: models.data.map((m) => m.id),
}));
