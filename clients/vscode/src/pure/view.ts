// The panel model as the webview draws it: markdown already rendered (safely) to HTML,
// everything else plain text the webview sets with textContent.
import { renderMarkdown } from "./markdown";
import type { PanelModel, Part } from "./model";

export type ViewPart =
  | { type: "html"; html: string }
  | { type: "tool"; name: string; arguments: string; ok?: boolean; summary?: string }
  | { type: "note"; level: string; text: string };

export interface ViewTurn {
  id: number;
  prompt: string;
  parts: ViewPart[];
  status: string;
  state: string;
  editOutcome?: string;
}

export interface ViewModel {
  sessionId?: string;
  running: boolean;
  turns: ViewTurn[];
}

function viewPart(part: Part): ViewPart {
  if (part.type === "text") return { type: "html", html: renderMarkdown(part.text) };
  if (part.type === "tool") {
    return { type: "tool", name: part.name, arguments: prettyArguments(part.arguments),
             ok: part.ok, summary: part.summary };
  }
  return part;
}

export function prettyArguments(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

export function toView(model: PanelModel): ViewModel {
  return {
    sessionId: model.sessionId,
    running: model.turns.some((t) => t.state === "running"),
    turns: model.turns.map((t) => ({
      id: t.id, prompt: t.prompt, parts: t.parts.map(viewPart), status: t.status,
      state: t.state, editOutcome: t.editOutcome,
    })),
  };
}
