// Drives a live `agentrt serve` with the official A2A JavaScript client (@a2a-js/sdk).
//
// A2A_URL is the server's base URL, AGENTRT_TOKEN its token. `node client.mjs` runs
// every scenario against examples/agui_endpoint.py:make_agent over both bindings
// (JSON-RPC, HTTP+JSON) and prints "ok <scenario>" for each; `node client.mjs
// subscribeAcrossRestart` drives tests.durable.server_app:make: it sends a task, prints
// "restart <task id>", reads the restarted server's URL from stdin, then follows the
// task to its end (writing A2A_GATE, which lets the held tool go on, once it follows).
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const token = process.env.AGENTRT_TOKEN;

// Every request carries the server's bearer token (the card is read without it).
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

function check(condition, what, seen) {
  if (!condition) {
    throw new Error(`${what}; seen: ${JSON.stringify(seen, null, 1)?.slice(0, 3000)}`);
  }
}

async function clientFor(url, binding) {
  const transport =
    binding === "JSONRPC"
      ? new JsonRpcTransportFactory({ fetchImpl: authFetch })
      : new RestTransportFactory({ fetchImpl: authFetch });
  const factory = new ClientFactory({ transports: [transport] });
  return factory.createFromUrl(url);
}

let counter = 0;

function message(parts, task) {
  counter += 1;
  return {
    message: {
      messageId: `node-${counter}`,
      role: Role.ROLE_USER,
      parts,
      ...(task ? { taskId: task.id, contextId: task.contextId } : {}),
    },
  };
}

const text = (value) => ({ content: { $case: "text", value } });
const data = (value) => ({ content: { $case: "data", value } });

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event.payload);
  return events;
}

const stateOf = (event) =>
  event.$case === "task" || event.$case === "statusUpdate" ? event.value.status.state : null;

const lastState = (events) => stateOf(events[events.length - 1]);

const artifactText = (events) =>
  events
    .filter((e) => e.$case === "artifactUpdate")
    .flatMap((e) => e.value.artifact.parts)
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .join("");

const statusData = (events) =>
  events
    .filter((e) => e.$case === "statusUpdate" && e.value.status.message)
    .flatMap((e) => e.value.status.message.parts)
    .filter((p) => p.content?.$case === "data")
    .map((p) => p.content.value);

// The run's final answer, from the server's own API: the last assistant message of the
// task's session (a task id is "<session id>.<N>").
async function finalAnswer(url, taskId) {
  const session = taskId.slice(0, taskId.lastIndexOf("."));
  const response = await authFetch(`${url}/sessions/${session}/messages`);
  check(response.ok, `GET /sessions/.../messages: ${response.status}`, {});
  const { messages } = await response.json();
  return messages.filter((m) => m.role === "assistant").pop().content;
}

const scenarios = {
  async card(url) {
    const response = await fetch(`${url}/.well-known/agent-card.json`);
    const card = await response.json();
    check(card.capabilities.streaming === true, "the card says streaming", card);
    check(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme === "Bearer", "bearer", card);
    const tools = card.skills.filter((s) => s.tags.includes("tool")).map((s) => s.name);
    check(tools.join() === "add,delete_file", "a skill per tool", card);
    for (const binding of ["JSONRPC", "HTTP+JSON"]) {
      const client = await clientFor(url, binding);
      check(client !== undefined, `a ${binding} client from the card`, card);
    }
  },

  async streamedAnswer(url, client) {
    const events = await collect(client.sendMessageStream(message([text("hello")])));
    check(events[0].$case === "task", "the stream opens with the task", events);
    check(lastState(events) === TaskState.TASK_STATE_COMPLETED, "completed", events);
    const said = artifactText(events);
    const taskId = events[0].value.id;
    check(said === (await finalAnswer(url, taskId)), "artifact text is the run's answer", events);
    check(said === "Hello from agentrt.", "the answer", events);
    const task = await client.getTask({ id: taskId });
    check(task.artifacts.at(-1).parts[0].content.value === said, "GetTask's artifact", task);
  },

  async toolCall(url, client) {
    const events = await collect(client.sendMessageStream(message([text("add 2 and 3")])));
    const seen = statusData(events)
      .filter((d) => d.type.startsWith("tool_call"))
      .map((d) => [d.type, d.tool_call.function.name, d.response]);
    const reasoning = statusData(events)
      .filter((d) => d.type === "agent_choice_reasoning")
      .map((d) => d.content)
      .join("");
    check(reasoning === "Two numbers: the add tool.", "the reasoning, streamed", events);
    check(
      JSON.stringify(seen) === JSON.stringify([["tool_call", "add", undefined], ["tool_call_response", "add", "5"]]),
      "the tool call and its response in status messages",
      seen,
    );
    check(lastState(events) === TaskState.TASK_STATE_COMPLETED, "completed", events);
    const task = await client.getTask({ id: events[0].value.id });
    const answer = task.artifacts.at(-1).parts[0].content.value;
    check(answer === "The sum is 5.", "the last artifact is the answer", task);
    check(answer === (await finalAnswer(url, task.id)), "and the run's", task);
  },

  async approval(url, client) {
    const asked = await collect(client.sendMessageStream(message([text("delete notes.txt")])));
    check(lastState(asked) === TaskState.TASK_STATE_INPUT_REQUIRED, "input required", asked);
    const [question] = statusData(asked.slice(-1));
    check(question.pending[0].name === "delete_file", "the pending call and its tool", asked);
    const task = asked[0].value;
    const decisions = { [question.pending[0].toolCallId]: "approve" };
    const rest = await collect(client.sendMessageStream(message([data({ decisions })], task)));
    check(lastState(rest) === TaskState.TASK_STATE_COMPLETED, "completed once approved", rest);
    const responses = statusData(rest).filter((d) => d.type === "tool_call_response");
    check(responses[0].response === "deleted notes.txt", "the tool ran", rest);
    check(artifactText(rest) === "Done: deleted notes.txt", "then the answer", rest);
  },

  async cancel(url, client) {
    const asked = await collect(client.sendMessageStream(message([text("delete notes.txt")])));
    const task = asked[0].value;
    const cancelled = await client.cancelTask({ id: task.id });
    check(cancelled.status.state === TaskState.TASK_STATE_CANCELED, "canceled", cancelled);
    const read = await client.getTask({ id: task.id });
    check(read.status.state === TaskState.TASK_STATE_CANCELED, "GetTask says so", read);
  },

  async error(url, client) {
    const events = await collect(client.sendMessageStream(message([text("fail")])));
    check(lastState(events) === TaskState.TASK_STATE_FAILED, "failed", events);
    const said = events.at(-1).value.status.message.parts[0].content.value;
    check(said.includes("the model is unavailable"), "the error's message", events);
  },
};

async function subscribeAcrossRestart(url) {
  const first = await clientFor(url, "JSONRPC");
  const sent = await first.sendMessage({
    ...message([text("tools")]),
    configuration: { returnImmediately: true },
  });
  // A Task (or a Message, which this agent never answers with).
  const task = sent;
  check(task.id && task.contextId, "a task back at once", sent);
  console.log(`restart ${task.id}`);
  const lines = createInterface({ input: process.stdin });
  const again = (await lines[Symbol.asyncIterator]().next()).value.trim();
  lines.close();
  const client = await clientFor(again, "JSONRPC");
  const read = await client.getTask({ id: task.id });
  check(read.status.state === TaskState.TASK_STATE_WORKING, "still working after restart", read);
  const events = [];
  for await (const event of client.resubscribeTask({ id: task.id })) {
    events.push(event.payload);
    if (events.length === 1) writeFileSync(process.env.A2A_GATE, "open");
  }
  check(events[0].$case === "task", "the subscription opens with the task", events);
  check(lastState(events) === TaskState.TASK_STATE_COMPLETED, "followed to completed", events);
  check(artifactText(events) === "all done: first done (1); slow done (3)", "the answer", events);
  console.log("ok subscribeAcrossRestart");
}

const url = process.env.A2A_URL;
const only = process.argv[2];
if (only === "subscribeAcrossRestart") {
  await subscribeAcrossRestart(url);
} else {
  for (const [name, scenario] of Object.entries(scenarios)) {
    for (const binding of name === "card" ? [null] : ["JSONRPC", "HTTP+JSON"]) {
      const client = binding && (await clientFor(url, binding));
      await scenario(url, client);
    }
    console.log(`ok ${name}`);
  }
}
