// A real Open Responses client: the Vercel AI SDK's Open Responses provider, run by node.
//
//   node ai_sdk_client.mjs URL MODE PROMPT [TOOL_NAME]
//
// URL is a server's /v1/responses; MODE is "generate" (generateText: one JSON answer) or
// "stream" (streamText: the server-sent events). With TOOL_NAME the model is offered that
// function tool (its arguments: {"location": string}), which the SDK does not execute.
// Prints one JSON line: the text, the tool calls, the finish reason, the token usage and any
// error the SDK reported. NODE_PATH names the folder of the installed packages
// (scripts/install_node_clients.sh).
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH, "noop.js"));
const { createOpenResponses } = require("@ai-sdk/open-responses");
const { generateText, streamText, jsonSchema, tool } = require("ai");

const [url, mode, prompt, toolName] = process.argv.slice(2);
const provider = createOpenResponses({ name: "palaestra", url });
const tools = toolName
  ? {
      [toolName]: tool({
        description: "The weather in a city.",
        inputSchema: jsonSchema({
          type: "object",
          properties: { location: { type: "string" } },
          required: ["location"],
        }),
      }),
    }
  : undefined;
const request = { model: provider("palaestra"), prompt, maxOutputTokens: 24, tools };

const calls = (list) => list.map((call) => ({ name: call.toolName, input: call.input }));
let answer;
if (mode === "stream") {
  const errors = [];
  const result = streamText({ ...request, onError: ({ error }) => errors.push(String(error)) });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part.type);
  answer = {
    text: await result.text,
    toolCalls: calls(await result.toolCalls),
    finishReason: await result.finishReason,
    usage: await result.usage,
    parts,
    errors,
  };
} else {
  const result = await generateText(request);
  answer = {
    text: result.text,
    toolCalls: calls(result.toolCalls),
    finishReason: result.finishReason,
    usage: result.usage,
    errors: [],
  };
}
console.log(JSON.stringify(answer));
