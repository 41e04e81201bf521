#!/usr/bin/env node
// A process agent in JavaScript (Node, no npm packages): streams the words
// of a message back, one artifact chunk each, then completes saying how
// many there were. The same agent as words.py.
//
// It speaks the gateway's process agent protocol
// (a2a-gateway/PROCESS_PROTOCOL.md): JSON objects, one per line, on stdin
// (from the gateway) and stdout (to it). The gateway starts it once and
// sends it every task; see ../gateway.toml. Try it by hand:
//
//   printf '%s\n' \
//     '{"type":"hello","protocol":1,"agent":"node"}' \
//     '{"type":"execute","taskId":"t1","contextId":"c1","message":{"role":"ROLE_USER","parts":[{"text":"one two"}]}}' \
//     | node examples/process/agents/words.js
"use strict";

const readline = require("node:readline");

function send(line) {
  // process.stdout.write on a pipe is asynchronous but keeps the order of
  // writes, and Node flushes it before exiting: whole lines, in order.
  process.stdout.write(JSON.stringify(line) + "\n");
}

function textOf(message) {
  // The message is A2A ProtoJSON: text parts carry "text".
  return (message.parts || []).map((part) => part.text || "").join("");
}

function execute(line) {
  const taskId = line.taskId;
  const words = textOf(line.message).split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    send({ type: "status", taskId, state: "rejected", text: "send some words" });
    return;
  }
  send({ type: "status", taskId, state: "working", text: `${words.length} words to go` });
  words.forEach((word, i) => {
    // Chunks of one artifact: the first creates it, the rest append.
    send({
      type: "artifact", taskId, artifactId: "words", name: "words",
      text: word + " ", append: i > 0, lastChunk: i === words.length - 1,
    });
  });
  // "completed" ends the task; its text becomes the status message.
  send({ type: "status", taskId, state: "completed", text: `${words.length} words, from JavaScript` });
}

// One JSON object per line. The gateway closing stdin ends the loop and,
// with nothing else to do, the process: its way to say "stop".
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (raw) => {
  if (!raw.trim()) return;
  const line = JSON.parse(raw);
  if (line.type === "hello") {
    // Goes to the gateway's log (so does anything on stderr).
    send({ type: "log", text: `node agent ${JSON.stringify(line.agent)} ready` });
  } else if (line.type === "execute") {
    execute(line);
  }
  // "cancel" needs nothing here: tasks end as soon as they start. Unknown
  // types are ignored, so newer gateways work too.
});
