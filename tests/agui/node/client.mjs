// The official AG-UI TypeScript client (@ag-ui/client's HttpAgent) against a live
// `agentrt serve examples/agui_endpoint.py:make_agent`: a plain answer, a server-side
// tool call, a frontend tool round trip, a confirmation as an interrupt, an error.
// HttpAgent.runAgent runs the client's own event enforcement and verification on
// every stream (a stream it rejects fails the run); this script asserts the messages
// each conversation ends with. Started by tests/agui/test_agui_client.py with
// AGUI_URL and AGENTRT_TOKEN; prints one "ok <scenario>" line each.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const url = process.env.AGUI_URL;
const token = process.env.AGENTRT_TOKEN;
assert.ok(url && token, "AGUI_URL and AGENTRT_TOKEN are required");

const colorTool = {
  name: "change_color",
  description: "Change the page's color.",
  parameters: { type: "object", properties: { color: { type: "string" } }, required: ["color"] },
};

function agent() {
  return new HttpAgent({ url, headers: { Authorization: `Bearer ${token}` }, threadId: randomUUID() });
}

// One run; what the client saw of it: every event type, and how it finished.
async function run(agent, parameters = {}) {
  const seen = { types: [], finished: null, error: null };
  const subscriber = {
    onEvent: ({ event }) => { seen.types.push(event.type); },
    onRunFinishedEvent: (params) => { seen.finished = params; },
    onRunErrorEvent: ({ event }) => { seen.error = event; },
  };
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (error) {
    seen.thrown = error;
  }
  return seen;
}

// The conversation as the client holds it, without ids: roles, texts, calls, results.
function story(messages) {
  return messages.map((m) => {
    if (m.role === "assistant") {
      const calls = (m.toolCalls ?? []).map((c) => [c.function.name, JSON.parse(c.function.arguments)]);
      return calls.length ? { assistant: m.content ?? "", calls } : { assistant: m.content ?? "" };
    }
    if (m.role === "tool") return { tool: m.content };
    if (m.role === "reasoning") return { reasoning: m.content };
    return { [m.role]: m.content };
  });
}

function user(content) {
  return { id: randomUUID(), role: "user", content };
}

async function plainAnswer() {
  const a = agent();
  a.addMessage(user("Hello!"));
  const seen = await run(a);
  assert.equal(seen.thrown, undefined, String(seen.thrown));
  assert.equal(seen.finished.outcome, "success");
  assert.deepEqual(seen.finished.pendingToolCallIds, []);
  assert.equal(seen.types[0], "RUN_STARTED");
  assert.equal(seen.types.at(-1), "RUN_FINISHED");
  assert.deepEqual(story(a.messages), [{ user: "Hello!" }, { assistant: "Hello from agentrt." }]);
}

async function serverTool() {
  const a = agent();
  a.addMessage(user("Please add 2 and 3."));
  const seen = await run(a);
  assert.equal(seen.thrown, undefined, String(seen.thrown));
  assert.ok(seen.types.includes("TOOL_CALL_RESULT"));
  assert.ok(seen.types.includes("REASONING_MESSAGE_CONTENT"));
  assert.deepEqual(story(a.messages), [
    { user: "Please add 2 and 3." },
    { reasoning: "Two numbers: the add tool." },
    { assistant: "Let me add them.", calls: [["add", { a: 2, b: 3 }]] },
    { tool: "5" },
    { assistant: "The sum is 5." },
  ]);
  // A second question on the same thread: the whole history goes back, and the
  // server adds only the new message (one answer, no repeated turn).
  a.addMessage(user("Hello again"));
  const again = await run(a);
  assert.equal(again.thrown, undefined, String(again.thrown));
  assert.deepEqual(story(a.messages).slice(5), [{ user: "Hello again" }, { assistant: "Hello from agentrt." }]);
}

async function frontendTool() {
  const a = agent();
  a.addMessage(user("Change the color, please."));
  const first = await run(a, { tools: [colorTool] });
  assert.equal(first.thrown, undefined, String(first.thrown));
  assert.equal(first.finished.outcome, "success");
  const [callId] = first.finished.pendingToolCallIds;
  assert.ok(callId, "the run names the frontend call it leaves to the client");
  const call = a.messages.at(-1).toolCalls[0];
  assert.equal(call.id, callId);
  assert.deepEqual(JSON.parse(call.function.arguments), { color: "teal" });
  assert.ok(!first.types.includes("TOOL_CALL_RESULT"), "the client runs the tool, not the server");
  // The client runs it and continues the thread with the result.
  a.addMessage({ id: randomUUID(), role: "tool", toolCallId: callId, content: "the page is teal" });
  const second = await run(a, { tools: [colorTool] });
  assert.equal(second.thrown, undefined, String(second.thrown));
  assert.deepEqual(second.finished.pendingToolCallIds, []);
  assert.deepEqual(story(a.messages), [
    { user: "Change the color, please." },
    { assistant: "", calls: [["change_color", { color: "teal" }]] },
    { tool: "the page is teal" },
    { assistant: "Done: the page is teal" },
  ]);
}

async function confirmation() {
  const a = agent();
  a.addMessage(user("Delete notes.txt"));
  const first = await run(a);
  assert.equal(first.thrown, undefined, String(first.thrown));
  assert.equal(first.finished.outcome, "interrupt");
  const [interrupt] = first.finished.interrupts;
  assert.equal(interrupt.reason, "tool_call_confirmation");
  assert.equal(a.messages.at(-1).toolCalls[0].id, interrupt.toolCallId);
  assert.deepEqual(a.pendingInterrupts.map((i) => i.id), [interrupt.id]);
  const second = await run(a, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { decision: "approve" } }],
  });
  assert.equal(second.thrown, undefined, String(second.thrown));
  assert.equal(second.finished.outcome, "success");
  assert.deepEqual(a.pendingInterrupts, []);
  assert.deepEqual(story(a.messages), [
    { user: "Delete notes.txt" },
    { assistant: "", calls: [["delete_file", { path: "notes.txt" }]] },
    { tool: "deleted notes.txt" },
    { assistant: "Done: deleted notes.txt" },
  ]);
}

async function error() {
  const a = agent();
  a.addMessage(user("Please fail."));
  const seen = await run(a);
  // RUN_ERROR ends the run as the protocol says; the client reports it, no exception.
  assert.equal(seen.thrown, undefined, String(seen.thrown));
  assert.equal(seen.finished, null);
  assert.equal(seen.error.message, "RuntimeError: the model is unavailable");
  assert.equal(seen.types.at(-1), "RUN_ERROR");
  assert.deepEqual(story(a.messages), [{ user: "Please fail." }]);
}

// A frontend tool's call, the server killed (kill -9) and started again on its durable
// store, then the result: the thread is in the store, so a client that sends only its
// new message (the tool result) goes on with the conversation. The test restarts the
// server when this prints "restart", and writes the new URL on stdin.
async function frontendToolAcrossRestart() {
  const a = agent();
  a.addMessage(user("Change the color, please."));
  const first = await run(a, { tools: [colorTool] });
  assert.equal(first.thrown, undefined, String(first.thrown));
  const [callId] = first.finished.pendingToolCallIds;
  assert.ok(callId, "the run names the frontend call it leaves to the client");
  console.log("restart");
  const newUrl = await nextLine();
  const result = { id: randomUUID(), role: "tool", toolCallId: callId, content: "the page is teal" };
  const b = new HttpAgent({
    url: newUrl,
    headers: { Authorization: `Bearer ${token}` },
    threadId: a.threadId,
    initialMessages: [result],
  });
  const second = await run(b, { tools: [colorTool] });
  assert.equal(second.thrown, undefined, String(second.thrown));
  assert.equal(second.finished.outcome, "success");
  assert.deepEqual(second.finished.pendingToolCallIds, []);
  assert.deepEqual(story(b.messages), [{ tool: "the page is teal" }, { assistant: "Done: the page is teal" }]);
}

function nextLine() {
  return new Promise((resolve) => {
    let buffered = "";
    const take = (chunk) => {
      buffered += chunk;
      const end = buffered.indexOf("\n");
      if (end >= 0) {
        process.stdin.off("data", take);
        process.stdin.pause();
        resolve(buffered.slice(0, end).trim());
      }
    };
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", take);
  });
}

const scenarios = { plainAnswer, serverTool, frontendTool, confirmation, error };
const chosen = process.argv[2];
if (chosen === "frontendToolAcrossRestart") {
  await frontendToolAcrossRestart();
  console.log(`ok ${chosen}`);
} else {
  for (const [name, scenario] of Object.entries(scenarios)) {
    await scenario();
    console.log(`ok ${name}`);
  }
}
