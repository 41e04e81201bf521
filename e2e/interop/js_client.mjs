// Drives a Rust A2A server with the official JavaScript SDK's client.
// Usage: node js_client.mjs BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)
// Prints one JSON object with what came back, for the Rust test to check.
import { randomUUID } from "node:crypto";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";

const [url, binding] = process.argv.slice(2);

function user(text) {
  return {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, returnImmediately = false) {
  return {
    tenant: "",
    message: user(text),
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately },
    metadata: undefined,
  };
}

const text = (message) => (message?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const state = (task) => taskStateToJSON(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED);

const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] });
const client = await new ClientFactory(options).createFromUrl(url);
const out = {};

const sent = await client.sendMessage(request("echo hello from js"));
out.send = { state: state(sent), text: text(sent.status?.message), id: sent.id };

const kinds = [];
let last;
for await (const event of client.sendMessageStream(request("stream 3"))) {
  kinds.push(event.payload?.$case);
  if (event.payload?.$case === "task") last = event.payload.value.status?.state;
  if (event.payload?.$case === "statusUpdate") last = event.payload.value.status?.state;
}
out.stream = { kinds, final: taskStateToJSON(last) };

const got = await client.getTask({ tenant: "", id: out.send.id, historyLength: undefined });
out.get = { state: state(got), history: got.history.map(text) };

const waiting = await client.sendMessage(request("wait", true));
const canceled = await client.cancelTask({ tenant: "", id: waiting.id, metadata: undefined });
out.cancel = { before: state(waiting), after: state(canceled) };

try {
  await client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined });
  out.missing = "no error";
} catch (error) {
  out.missing = `${error?.constructor?.name}: ${error?.message}`;
}

console.log(JSON.stringify(out));
