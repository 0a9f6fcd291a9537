// The panel model as the webview draws it: markdown already rendered (safely) to HTML,
// everything else plain text the webview sets with textContent. `ViewSync` turns a change of
// the model into the few operations the webview applies (append to the streaming turn, a
// new part, a new footer), so a chunk costs the same whatever came before it.
import { renderMarkdown } from "./markdown";
import type { Chip, PanelModel, Part, Refused, Turn } from "./model";
import { StreamingMarkdown, type Tail } from "./stream";

export type ViewPart =
  | { type: "md"; html: string; tail: Tail | null }
  | { type: "tool"; name: string; arguments: string; ok?: boolean; summary?: string }
  | { type: "note"; level: string; text: string };

export interface ViewTurn {
  id: number;
  prompt: string;
  parts: ViewPart[];
  status: string;
  state: string;
  editOutcome?: string;
  chips?: Chip[];
  refused?: Refused[];
  answeredBy?: string;
}

export interface ViewModel {
  sessionId?: string;
  running: boolean;
  turns: ViewTurn[];
  /** Stored turns before the first one drawn: the "Earlier turns" control shows them. */
  earlier: number;
}

export type PanelOp =
  | { op: "turn"; turn: ViewTurn } // a turn the panel has not drawn yet
  | { op: "part"; turn: number; index: number; part: ViewPart } // added or replaced
  | { op: "md"; turn: number; index: number; append: string; tail?: Tail | null;
      codeAppend?: string }
  | { op: "footer"; turn: number; status: string; state: string; editOutcome?: string;
      answeredBy?: string }
  | { op: "head"; turn: number; chips: Chip[]; refused: Refused[] }
  | { op: "running"; running: boolean }
  // Earlier stored turns put above those drawn (oldest first), and how many remain before
  // them; `error` instead when they could not be fetched.
  | { op: "earlier"; turns: ViewTurn[]; more: number; error?: string };

export function prettyArguments(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

type PartState =
  | { kind: "text"; stream?: StreamingMarkdown; fed: number }
  | { kind: "other"; key: string };

interface TurnState {
  parts: PartState[];
  footer: string;
  head: string;
}

function partKey(part: Part): string {
  return part.type === "tool" ? `${part.ok}\u0000${part.summary ?? ""}` : part.type;
}

function footerKey(turn: Turn): string {
  return `${turn.state}\u0000${turn.status}\u0000${turn.editOutcome ?? ""}\u0000${turn.answeredBy ?? ""}`;
}

function headKey(turn: Turn): string {
  return `${turn.chips?.length ?? 0}\u0000${turn.refused?.length ?? 0}`;
}

/** What the webview was last sent, per turn; produces the operations that bring it up to
 * date with the model. */
export class ViewSync {
  private turns = new Map<number, TurnState>();
  private running = false;

  /** The whole model, for a fresh webview or a new conversation. */
  full(model: PanelModel): ViewModel {
    this.turns = new Map();
    this.running = model.turns.some((t) => t.state === "running");
    return { sessionId: model.sessionId, running: this.running,
             turns: model.turns.map((t) => this.drawTurn(t)), earlier: model.earlier };
  }

  /** Turns put above those drawn (prependTurns): only they are drawn, nothing else is sent. */
  earlier(model: PanelModel, added: Turn[]): PanelOp {
    return { op: "earlier", turns: added.map((t) => this.drawTurn(t)), more: model.earlier };
  }

  /** The operations that bring the webview from what it was sent to `turn` as it is now. */
  changes(model: PanelModel, turn: Turn): PanelOp[] {
    const ops: PanelOp[] = [];
    const state = this.turns.get(turn.id);
    if (!state) {
      ops.push({ op: "turn", turn: this.drawTurn(turn) });
    } else {
      turn.parts.forEach((part, index) => {
        const known = state.parts[index];
        if (!known) {
          const [partState, view] = this.drawPart(part, turn.state === "running");
          state.parts.push(partState);
          ops.push({ op: "part", turn: turn.id, index, part: view });
        } else if (known.kind === "text" && part.type === "text") {
          const op = this.textChange(known, part.text, turn.state !== "running", turn.id, index);
          if (op) ops.push(op);
        } else if (known.kind === "other" && known.key !== partKey(part)) {
          known.key = partKey(part);
          ops.push({ op: "part", turn: turn.id, index, part: this.drawPart(part, false)[1] });
        }
      });
      if (state.head !== headKey(turn)) {
        state.head = headKey(turn);
        ops.push({ op: "head", turn: turn.id, chips: turn.chips ?? [], refused: turn.refused ?? [] });
      }
      if (state.footer !== footerKey(turn)) {
        state.footer = footerKey(turn);
        ops.push({ op: "footer", turn: turn.id, status: turn.status, state: turn.state,
                   editOutcome: turn.editOutcome, answeredBy: turn.answeredBy });
      }
    }
    const running = model.turns.some((t) => t.state === "running");
    if (running !== this.running) {
      this.running = running;
      ops.push({ op: "running", running });
    }
    return ops;
  }

  private textChange(known: { stream?: StreamingMarkdown; fed: number }, text: string,
                     finished: boolean, turn: number, index: number): PanelOp | undefined {
    const stream = known.stream;
    if (!stream) return undefined; // drawn finished: it does not change any more
    const grew = text.length > known.fed;
    if (grew) {
      stream.push(text.slice(known.fed));
      known.fed = text.length;
    }
    if (finished) {
      known.stream = undefined;
      const end = stream.finish();
      return "append" in end ? { op: "md", turn, index, append: end.append, tail: null }
        : { op: "part", turn, index, part: { type: "md", html: end.replace, tail: null } };
    }
    if (!grew) return undefined;
    const update = stream.take();
    if (!update.append && update.tail === undefined && update.codeAppend === undefined) {
      return undefined;
    }
    return { op: "md", turn, index, ...update };
  }

  private drawTurn(turn: Turn): ViewTurn {
    const running = turn.state === "running";
    const parts: PartState[] = [];
    const views = turn.parts.map((part) => {
      const [state, view] = this.drawPart(part, running);
      parts.push(state);
      return view;
    });
    this.turns.set(turn.id, { parts, footer: footerKey(turn), head: headKey(turn) });
    return { id: turn.id, prompt: turn.prompt, parts: views, status: turn.status,
             state: turn.state, editOutcome: turn.editOutcome, chips: turn.chips,
             refused: turn.refused, answeredBy: turn.answeredBy };
  }

  private drawPart(part: Part, streaming: boolean): [PartState, ViewPart] {
    if (part.type === "text") {
      if (!streaming) {
        return [{ kind: "text", fed: part.text.length },
                { type: "md", html: renderMarkdown(part.text), tail: null }];
      }
      const stream = new StreamingMarkdown();
      stream.push(part.text);
      stream.take();
      const { html, tail } = stream.snapshot();
      return [{ kind: "text", stream, fed: part.text.length }, { type: "md", html, tail }];
    }
    if (part.type === "tool") {
      return [{ kind: "other", key: partKey(part) },
              { type: "tool", name: part.name, arguments: prettyArguments(part.arguments),
                ok: part.ok, summary: part.summary }];
    }
    return [{ kind: "other", key: partKey(part) }, part];
  }
}
