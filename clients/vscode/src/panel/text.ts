// The panel's small text rules, without the page (unit-tested in test/panel.test.ts).

/** "512 B", "1.5 KB", "2.0 MB". */
export function formatSize(bytes: number): string {
  return bytes < 1024 ? bytes + " B" : bytes < 1024 * 1024 ? (bytes / 1024).toFixed(1) + " KB"
    : (bytes / 1024 / 1024).toFixed(1) + " MB";
}

/** The class of a turn's edit line, from what it says. */
export function editOutcomeClass(outcome: string): "applied" | "discarded" | "proposed" {
  return outcome.startsWith("Edit applied") ? "applied" :
    outcome.startsWith("Edit not applied") ? "discarded" : "proposed";
}

export interface MentionAt {
  at: number; // where the trigger character is
  trigger: string; // "@" or "#"
  query: string; // what follows it up to the caret
}

/** The mention being typed just before the caret: `@` or `#` at the start or after a space,
 * then no space, `@` or `#`; null when there is none. */
export function mentionBefore(value: string, caret: number): MentionAt | null {
  const before = value.slice(0, caret);
  const m = /(^|\s)([@#])([^\s@#]*)$/.exec(before);
  return m ? { at: before.length - m[3].length - 1, trigger: m[2], query: m[3] } : null;
}
