// When the AgentLS server stops without being asked: restart it, a little later each time,
// and give up after a few stops close together (pure: no vscode import, so node:test covers
// it). vscode-languageclient's own policy restarts at once; three stops within a second
// (a condition that lasts a moment, such as a window reloading) then end the server for good.

export const RESTART_WINDOW_MS = 3 * 60 * 1000; // stops older than this are forgotten
export const MAX_RESTARTS = 4; // within the window; the next stop ends the server
export const FIRST_DELAY_MS = 500;
export const MAX_DELAY_MS = 4000;

export type RestartDecision =
  | { restart: true; delayMs: number; attempt: number }
  | { restart: false; stops: number };

/** The decision for a stop at `now`, given the earlier stops' times (updated in place). */
export function onServerStop(stops: number[], now: number): RestartDecision {
  while (stops.length > 0 && now - stops[0] > RESTART_WINDOW_MS) stops.shift();
  stops.push(now);
  if (stops.length > MAX_RESTARTS) return { restart: false, stops: stops.length };
  const attempt = stops.length;
  return { restart: true, attempt,
           delayMs: Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1)) };
}

// vscode-jsonrpc's code for a request still waiting when its connection went away: what
// `start()` fails with when the server process ends before answering `initialize`.
const PENDING_RESPONSE_REJECTED = -32097;

/** Whether a failed start is worth another try: the server ran and ended during start-up
 * (a condition of the moment may be why). A command that cannot be run, or a server that
 * answered `initialize` with an error, fails the same way every time: say so at once. */
export function startMayBeRetried(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === PENDING_RESPONSE_REJECTED;
}
