// Stock OpenAI clients against a live Sluice (tests/interop/run_interop.sh starts it and sets
// SLUICE_BASE_URL): the official `openai` Node SDK and LangChain JS, used the way their own
// documentation shows, unchanged. Run with `node --test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";

const baseURL = process.env.SLUICE_BASE_URL;
assert.ok(baseURL, "SLUICE_BASE_URL is not set (run tests/interop/run_interop.sh)");
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const question = [{ role: "user", content: "Why do sea otters hold hands?" }];

test("models: list and retrieve", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes("sluice"), `models: ${ids}`);
  const model = await client.models.retrieve("sluice");
  assert.equal(model.id, "sluice");
  assert.ok(model.created > 1_700_000_000, `created ${model.created}`);
  await assert.rejects(client.models.retrieve("gpt-9"), OpenAI.NotFoundError);
});

test("chat: non-streaming answer, usage and its sources beside the text", async () => {
  const c = await client.chat.completions.create({ model: "sluice", messages: question, max_tokens: 24 });
  assert.equal(c.object, "chat.completion");
  assert.match(c.id, /^chatcmpl-[0-9a-f]{19}-\d+$/);
  const choice = c.choices[0];
  assert.equal(choice.message.role, "assistant");
  assert.equal(typeof choice.message.content, "string");
  assert.ok(choice.message.content.length > 0);
  assert.ok(!choice.message.content.includes("Sources:"), "citations: field keeps the list out of the text");
  assert.equal(choice.logprobs, null);
  assert.ok(["stop", "length"].includes(choice.finish_reason));
  assert.ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0, JSON.stringify(c.usage));
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  assert.ok(Array.isArray(c.sluice_sources) && c.sluice_sources[0].n === 1, JSON.stringify(c.sluice_sources));
});

test("chat: the ordinary streaming loop, indexing choices[0] unguarded", async () => {
  const stream = await client.chat.completions.create({ model: "sluice", messages: question, max_tokens: 24, stream: true });
  let text = "";
  let finish = null;
  let sources = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    text += chunk.choices[0].delta.content ?? ""; // throws if a chunk had no choices
    finish = chunk.choices[0].finish_reason ?? finish;
    if (chunk.sluice_sources) sources = chunk.sluice_sources;
  }
  assert.ok(text.length > 0);
  assert.ok(["stop", "length"].includes(finish));
  assert.ok(Array.isArray(sources) && sources.length > 0, "sources ride on the finish chunk");
});

test("chat: stream helper and finalChatCompletion", async () => {
  const runner = client.chat.completions.stream({ model: "sluice", messages: question, max_tokens: 24 });
  let deltas = "";
  runner.on("content", (delta) => (deltas += delta));
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, deltas);
  assert.ok(deltas.length > 0);
});

test("chat: include_usage ends with a usage chunk", async () => {
  const stream = await client.chat.completions.create({
    model: "sluice", messages: question, max_tokens: 8, stream: true, stream_options: { include_usage: true },
  });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.ok(usage && usage.completion_tokens > 0, JSON.stringify(usage));
});

test("completions: text completion, plain and streamed", async () => {
  const body = { model: "sluice", prompt: "Once upon a time", max_tokens: 12, temperature: 0 };
  const c = await client.completions.create(body);
  assert.equal(c.object, "text_completion");
  assert.match(c.id, /^cmpl-/);
  assert.ok(c.choices[0].text.length > 0);
  const stream = await client.completions.create({ ...body, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0].text;
  assert.equal(text, c.choices[0].text, "greedy: the same answer streamed and whole");
});

test("errors: the SDK's own classes, with status, code and param", async () => {
  const notFound = await client.chat.completions.create({ model: "nope", messages: question }).catch((e) => e);
  assert.ok(notFound instanceof OpenAI.NotFoundError, String(notFound));
  assert.equal(notFound.status, 404);
  assert.equal(notFound.code, "model_not_found");
  const tooMany = await client.chat.completions.create({ model: "sluice", messages: question, max_tokens: 100000 }).catch((e) => e);
  assert.ok(tooMany instanceof OpenAI.BadRequestError, String(tooMany));
  assert.equal(tooMany.param, "max_tokens");
  assert.match(tooMany.message, /at most \d+/);
  const structured = await client.chat.completions
    .create({ model: "sluice", messages: question, response_format: { type: "json_object" } })
    .catch((e) => e);
  assert.ok(structured instanceof OpenAI.BadRequestError, String(structured));
  assert.equal(structured.code, "unsupported");
  assert.equal(structured.param, "response_format.type");
  const tools = await client.chat.completions
    .create({ model: "sluice", messages: question, tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] })
    .catch((e) => e);
  assert.ok(tools instanceof OpenAI.BadRequestError, String(tools));
  assert.equal(tools.param, "tools");
});

test("abort: a stream the caller aborts stops early (the server counts a 499)", async () => {
  const controller = new AbortController();
  // A completion long enough to be cut (stories260K writes on past 96 tokens).
  const stream = await client.completions.create(
    { model: "sluice", prompt: "Once upon a time", max_tokens: 96, temperature: 0, stream: true },
    { signal: controller.signal },
  );
  let chunks = 0;
  // The SDK ends the iteration quietly on its own abort (or throws APIUserAbortError in older
  // versions); either way no further chunks arrive than were already on their way.
  const err = await (async () => {
    for await (const chunk of stream) if (++chunks === 2) controller.abort();
  })().catch((e) => e);
  assert.ok(err === undefined || err instanceof OpenAI.APIUserAbortError, String(err));
  assert.ok(chunks < 60, `${chunks} chunks after the abort`);
});

test("LangChain: invoke and stream", async () => {
  const llm = new ChatOpenAI({ model: "sluice", apiKey: "unused", maxTokens: 24, maxRetries: 0, configuration: { baseURL } });
  const message = await llm.invoke("Why do sea otters hold hands?");
  assert.equal(typeof message.content, "string");
  assert.ok(message.content.length > 0);
  let text = "";
  for await (const chunk of await llm.stream("Why do sea otters hold hands?")) text += chunk.content;
  assert.ok(text.length > 0);
});

test("LangChain: withStructuredOutput is refused with a 400 until constrained decoding exists", async () => {
  const llm = new ChatOpenAI({ model: "sluice", apiKey: "unused", maxRetries: 0, configuration: { baseURL } });
  const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], title: "Answer" };
  const err = await llm.withStructuredOutput(schema).invoke("Why do sea otters hold hands?").catch((e) => e);
  assert.ok(err instanceof Error, "structured output must not silently return free text");
  assert.match(String(err.message ?? err), /400|unsupported/i, String(err));
});
