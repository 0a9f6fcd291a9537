// Drives `agentls acp` (a real process) with the official TypeScript ACP SDK, a client no
// one on the AgentLS team wrote. Usage: node drive_agentls.mjs <python> <project> <reply>
// where <reply> is "allow", "reject", "terminal" (allow, with a terminal that really runs
// what it is given) or "cancel" (cancel mid-stream, then list and load). Prints one JSON report on stdout; the Python test
// (tests/acp/test_acp_typescript_client.py) checks it. The model is the scripted one.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [python, project, reply] = process.argv.slice(2);
const agent = spawn(python, ["-P", "-m", "agentls", "acp"], {
  cwd: project,
  stdio: ["pipe", "pipe", "inherit"],
});

// Count the raw session/update lines, to check every one passed the SDK's schema parse.
let rawUpdates = 0;
let pending = "";
const tapped = Readable.toWeb(agent.stdout).pipeThrough(
  new TransformStream({
    transform(chunk, controller) {
      pending += new TextDecoder().decode(chunk);
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines) {
        if (line.trim() && JSON.parse(line).method === "session/update") rawUpdates += 1;
      }
      controller.enqueue(chunk);
    },
  }),
);
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), tapped);

const updates = [];
const permissions = [];
const writes = [];
// The client's terminals: the command really runs; stdout and stderr as one output, the
// oldest bytes dropped past outputByteLimit, as the protocol says.
const terminals = new Map();
function killTerminal(t) {
  if (t.exit === null) {
    t.killed = true;
    try { process.kill(-t.child.pid, "SIGKILL"); } catch { /* already gone */ }
  }
}
const app = acp
  .client()
  .onNotification("session/update", ({ params }) => {
    updates.push(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    permissions.push(params);
    const wanted = reply === "reject" ? "reject_all" : "apply_all";
    const option = params.options.find((o) => o.optionId === wanted) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("terminal/create", ({ params }) => {
    const terminalId = `term-${terminals.size + 1}`;
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ?? undefined, detached: true, stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value])) },
    });
    const t = { argv: [params.command, ...(params.args ?? [])], cwd: params.cwd, child,
                output: Buffer.alloc(0), truncated: false, exit: null, killed: false, released: false };
    const add = (chunk) => {
      t.output = Buffer.concat([t.output, chunk]);
      const limit = params.outputByteLimit;
      if (limit != null && t.output.length > limit) {
        t.output = t.output.subarray(t.output.length - limit);
        t.truncated = true;
      }
    };
    child.stdout.on("data", add);
    child.stderr.on("data", add);
    t.exited = new Promise((resolve) => child.on("close", (code, signal) => {
      t.exit = { exitCode: code, signal };
      resolve(t.exit);
    }));
    terminals.set(terminalId, t);
    return { terminalId };
  })
  .onRequest("terminal/output", ({ params }) => {
    const t = terminals.get(params.terminalId);
    return { output: t.output.toString("utf8"), truncated: t.truncated,
             ...(t.exit === null ? {} : { exitStatus: t.exit }) };
  })
  .onRequest("terminal/wait_for_exit", ({ params }) => terminals.get(params.terminalId).exited)
  .onRequest("terminal/kill", ({ params }) => {
    killTerminal(terminals.get(params.terminalId));
    return {};
  })
  .onRequest("terminal/release", ({ params }) => {
    const t = terminals.get(params.terminalId);
    killTerminal(t);
    t.released = true;
    return {};
  })
  .onRequest("fs/write_text_file", async ({ params }) => {
    writes.push(params.path);
    const { writeFile } = await import("node:fs/promises");
    await writeFile(params.path, params.content);
    return {};
  });

async function cancelRun(ctx) {
  await ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const session = await ctx.request("session/new", { cwd: project, mcpServers: [] });
  const turn = ctx.request("session/prompt", {
    sessionId: session.sessionId, prompt: [{ type: "text", text: "talk" }],
  });
  while (!updates.some((u) => u.sessionUpdate === "agent_message_chunk")) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await ctx.notify("session/cancel", { sessionId: session.sessionId });
  const answer = await turn;
  const listed = await ctx.request("session/list", { cwd: project });
  const before = updates.length;
  await ctx.request("session/load", { sessionId: session.sessionId, cwd: project, mcpServers: [] });
  return {
    stopReason: answer.stopReason,
    listed: listed.sessions.map((s) => s.sessionId).includes(session.sessionId),
    replayed: updates.slice(before).map((u) => u.sessionUpdate),
    updates,
  };
}

const report = await app.connectWith(stream, async (ctx) => {
  if (reply === "cancel") return cancelRun(ctx);
  const init = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: true },
                          terminal: reply === "terminal" },
  });
  const session = await ctx.request("session/new", { cwd: project, mcpServers: [] });
  const modelOption = session.configOptions.find((o) => o.id === "model");
  await ctx.request("session/set_config_option", {
    sessionId: session.sessionId, configId: "model", value: "other",
  });
  const answer = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "fix add and double" }],
  });
  let unknownSession = null;
  try {
    await ctx.request("session/load", { sessionId: "nope", cwd: project, mcpServers: [] });
  } catch (error) {
    unknownSession = { code: error.code, message: String(error.message), data: error.data };
  }
  return {
    protocolVersion: init.protocolVersion,
    loadSession: init.agentCapabilities.loadSession,
    modes: session.modes.availableModes.map((m) => m.id),
    models: modelOption.options.map((o) => o.value),
    stopReason: answer.stopReason,
    updates,
    permissions,
    writes,
    unknownSession,
    terminals: [...terminals.values()].map((t) => ({
      argv: t.argv, cwd: t.cwd, exit: t.exit, killed: t.killed, released: t.released,
    })),
  };
});
// Let the last notifications drain through the tap before counting.
await new Promise((resolve) => setTimeout(resolve, 100));
report.rawUpdates = rawUpdates;
agent.stdin.end();
await new Promise((resolve) => agent.on("exit", resolve));
process.stdout.write(JSON.stringify(report) + "\n");
