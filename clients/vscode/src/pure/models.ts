// The model picker's rows (pure: node:test covers it). The picker opens at once with the
// configured models (agentls/models with probe: false) and fills in what the servers serve
// when the probing answer comes (src/conversation.ts).

export interface BackendOption {
  name: string; model: string; models: string[]; status: string; detail: string; active: boolean;
}

export interface ModelRow {
  label: string;
  description: string;
  detail?: string;
  backend: string;
  model: string;
}

/** One row per model a chat backend offers (agent-CLI backends answer chats their own way:
 * not offered). `probed`: the servers were asked, so a status other than available is news
 * worth a line; before that every row is "unchecked" and the picker shows it is busy. */
export function modelRows(backends: BackendOption[], current: string | undefined,
                          probed: boolean): ModelRow[] {
  return backends.filter((b) => b.status !== "cli").flatMap((b) =>
    (b.models.length ? b.models : [b.model]).filter(Boolean).map((model) => ({
      label: model, description: b.name + (model === current ? " · current" : ""),
      detail: probed && b.status !== "available" ? `${b.status}: ${b.detail}` : undefined,
      backend: b.name, model,
    })));
}
