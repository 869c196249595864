// Stock OpenAI clients against a live Sluice (tests/interop/run_interop.sh starts it and sets
// SLUICE_BASE_URL): the official `openai` Node SDK and LangChain JS, used the way their own
// documentation shows, unchanged. Run with `node --test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const baseURL = process.env.SLUICE_BASE_URL;
assert.ok(baseURL, "SLUICE_BASE_URL is not set (run tests/interop/run_interop.sh)");
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const question = [{ role: "user", content: "Why do sea otters hold hands?" }];
// run_interop.sh says whether the server generates (structured outputs need a model; an
// extractive pipeline refuses them with a 400).
const withModel = process.env.SLUICE_INTEROP_MODEL === "1";
const Otter = z.object({ name: z.string(), age: z.number().int(), mood: z.enum(["sleepy", "playful"]), friends: z.array(z.string()) });

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
  if (withModel) {  // an extractive answer has no token limit to exceed
    const tooMany = await client.chat.completions.create({ model: "sluice", messages: question, max_tokens: 100000 }).catch((e) => e);
    assert.ok(tooMany instanceof OpenAI.BadRequestError, String(tooMany));
    assert.equal(tooMany.param, "max_tokens");
    assert.match(tooMany.message, /at most \d+/);
  }
});

test("structured: parse() with a zod response format", async () => {
  const request = { model: "sluice", messages: question, max_tokens: 80, response_format: zodResponseFormat(Otter, "otter") };
  if (!withModel) {
    const err = await client.chat.completions.parse(request).catch((e) => e);
    assert.ok(err instanceof OpenAI.BadRequestError, String(err));
    assert.equal(err.code, "unsupported");
    assert.equal(err.param, "response_format");
    return;
  }
  const completion = await client.chat.completions.parse(request);
  const otter = completion.choices[0].message.parsed;
  assert.equal(typeof otter.name, "string");
  assert.ok(Number.isInteger(otter.age));
  assert.ok(["sleepy", "playful"].includes(otter.mood));
  assert.ok(Array.isArray(otter.friends));
  const object = await client.chat.completions.create({ model: "sluice", messages: question, max_tokens: 40, response_format: { type: "json_object" } });
  assert.equal(typeof JSON.parse(object.choices[0].message.content), "object");
});

test("structured: a tool call parsed by zodFunction, and the refusals", async () => {
  const tools = [zodFunction({ name: "find_otter", parameters: z.object({ river: z.string(), count: z.number().int() }) })];
  const request = { model: "sluice", messages: question, max_tokens: 60, tools, tool_choice: { type: "function", function: { name: "find_otter" } } };
  if (withModel) {
    const completion = await client.chat.completions.parse(request);
    const call = completion.choices[0].message.tool_calls[0];
    assert.equal(completion.choices[0].finish_reason, "tool_calls");
    assert.equal(call.function.name, "find_otter");
    assert.equal(typeof call.function.parsed_arguments.river, "string");
    assert.ok(Number.isInteger(call.function.parsed_arguments.count));
    // Streamed: the SDK's stream helper assembles the call.
    const final = await client.chat.completions.stream(request).finalChatCompletion();
    assert.equal(final.choices[0].message.tool_calls[0].function.name, "find_otter");
  }
  const auto = await client.chat.completions.create({ model: "sluice", messages: question, tools }).catch((e) => e);
  assert.ok(auto instanceof OpenAI.BadRequestError, String(auto));
  assert.equal(auto.param, "tool_choice");
  const pattern = await client.chat.completions
    .create({
      model: "sluice",
      messages: question,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { id: { type: "string", pattern: "^a" } } } } },
    })
    .catch((e) => e);
  assert.ok(pattern instanceof OpenAI.BadRequestError, String(pattern));
  assert.equal(pattern.code, "unsupported");
  assert.equal(pattern.param, "response_format.json_schema.schema.properties.id.pattern");
});

test("abort: a stream the caller aborts stops early (the server counts a 499)", async () => {
  const controller = new AbortController();
  // A completion long enough to be cut: run_interop.sh lets the pipeline generate 300 tokens.
  const stream = await client.completions.create(
    { model: "sluice", prompt: "Once upon a time", max_tokens: 300, temperature: 0, stream: true },
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

test("LangChain: withStructuredOutput, by JSON schema and by function calling", async () => {
  const llm = new ChatOpenAI({ model: "sluice", apiKey: "unused", maxTokens: 80, maxRetries: 0, configuration: { baseURL } });
  for (const method of ["jsonSchema", "functionCalling"]) {
    const structured = llm.withStructuredOutput(Otter, { name: "otter", method });
    if (!withModel) {
      const err = await structured.invoke("Tell me about an otter.").catch((e) => e);
      assert.ok(err instanceof Error, "structured output must not silently return free text");
      assert.match(String(err.message ?? err), /400|unsupported/i, String(err));
      continue;
    }
    const otter = await structured.invoke("Tell me about an otter.");
    assert.equal(typeof otter.name, "string", `${method}: ${JSON.stringify(otter)}`);
    assert.ok(Number.isInteger(otter.age), `${method}: ${JSON.stringify(otter)}`);
    assert.ok(["sleepy", "playful"].includes(otter.mood), `${method}: ${JSON.stringify(otter)}`);
  }
});

// POST /v1/embeddings with the pretrained sentence encoder (model "use-lite"). The SDK asks for
// base64 by default and decodes it; encoding_format "float" gets plain arrays.
test("embeddings: the SDK's default (base64, decoded) and float agree", async () => {
  const input = ["How do I enable dark mode?", "How can I turn on dark mode?", "Volcanoes erupt when magma rises."];
  const b = await client.embeddings.create({ model: "use-lite", input });
  const f = await client.embeddings.create({ model: "use-lite", input, encoding_format: "float" });
  assert.equal(b.object, "list");
  assert.equal(b.model, "use-lite");
  assert.equal(b.data.length, 3);
  assert.ok(b.usage.prompt_tokens > 0 && b.usage.total_tokens === b.usage.prompt_tokens, JSON.stringify(b.usage));
  for (let i = 0; i < 3; i++) {
    assert.equal(b.data[i].index, i);
    assert.equal(b.data[i].embedding.length, 512);
    // float carries each float32 in its shortest decimal form: it reads back to the same float32.
    assert.deepEqual(Array.from(b.data[i].embedding), f.data[i].embedding.map(Math.fround));
  }
  const dot = (x, y) => x.reduce((s, v, k) => s + v * y[k], 0);
  const [a, p, v] = f.data.map((d) => d.embedding);
  assert.ok(Math.abs(dot(a, a) - 1) < 1e-5, "unit length");
  assert.ok(dot(a, p) > dot(a, v), "a paraphrase is nearer than an unrelated sentence");
});

test("embeddings: refusals are the SDK's error classes with param", async () => {
  await assert.rejects(client.embeddings.create({ model: "use-lite", input: "x", dimensions: 256 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, "dimensions");
    return true;
  });
  await assert.rejects(client.embeddings.create({ model: "use-lite", input: [[1, 2, 3]] }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, "input[0]");
    return true;
  });
  await assert.rejects(client.embeddings.create({ model: "text-embedding-3-small", input: "x" }), OpenAI.NotFoundError);
});

test("embeddings: LangChain OpenAIEmbeddings", async () => {
  const { OpenAIEmbeddings } = await import("@langchain/openai");
  const emb = new OpenAIEmbeddings({ model: "use-lite", apiKey: "unused", configuration: { baseURL }, maxRetries: 0 });
  const q = await emb.embedQuery("Why do sea otters hold hands?");
  const docs = await emb.embedDocuments(["Sea otters hold hands while they sleep.", "A volcano erupts."]);
  assert.equal(q.length, 512);
  assert.equal(docs.length, 2);
  const dot = (x, y) => x.reduce((s, v, k) => s + v * y[k], 0);
  assert.ok(dot(q, docs[0]) > dot(q, docs[1]), "the otter passage is nearer to the otter question");
});
