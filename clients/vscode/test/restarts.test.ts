import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_RESTARTS, onServerStop, RESTART_WINDOW_MS, startMayBeRetried } from "../src/pure/restarts";

test("a stop is followed by a restart, later each time: 0.5 s, 1 s, 2 s, 4 s", () => {
  const stops: number[] = [];
  const delays = [0, 10, 20, 30].map((t) => onServerStop(stops, t));
  assert.deepEqual(delays, [
    { restart: true, attempt: 1, delayMs: 500 }, { restart: true, attempt: 2, delayMs: 1000 },
    { restart: true, attempt: 3, delayMs: 2000 }, { restart: true, attempt: 4, delayMs: 4000 },
  ]);
});

test("one stop more than MAX_RESTARTS within three minutes ends the server", () => {
  const stops: number[] = [];
  for (let i = 0; i < MAX_RESTARTS; i++) assert.equal(onServerStop(stops, i * 1000).restart, true);
  assert.deepEqual(onServerStop(stops, 60_000), { restart: false, stops: MAX_RESTARTS + 1 });
});

test("stops older than three minutes are forgotten: a server that stops now and then is restarted", () => {
  const stops: number[] = [];
  for (let i = 0; i < MAX_RESTARTS; i++) onServerStop(stops, i);
  const later = onServerStop(stops, MAX_RESTARTS + RESTART_WINDOW_MS);
  assert.deepEqual(later, { restart: true, attempt: 1, delayMs: 500 });
  assert.equal(stops.length, 1);
});

test("a start is tried again only when the server ended before answering initialize", () => {
  assert.equal(startMayBeRetried({ code: -32097, message: "Pending response rejected since connection got disposed" }), true);
  assert.equal(startMayBeRetried(new Error("Launching server using command nope failed.")), false);
  assert.equal(startMayBeRetried({ code: -32603, message: "initialize failed" }), false);
  assert.equal(startMayBeRetried(undefined), false);
});
